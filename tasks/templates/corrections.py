"""Corrections of known upstream data errors, applied before validation and recorded: inputs are never edited and
code never special-cases a row. A correction whose old value no longer matches is an error, so a fixed upstream
file is never silently "corrected" twice."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_csv_table

COLUMNS = ["file", "row_key", "column", "old_value", "new_value", "reason"]


@dataclass(frozen=True)
class Correction:
    file: str  # base name (or glob pattern) of the input files it applies to
    row_key: str
    column: str
    old_value: str
    new_value: str
    reason: str
    origin: str  # where the correction itself was written, "corrections.csv row 3"


@dataclass(frozen=True)
class AppliedCorrection:
    file: str
    row: int
    row_key: str
    column: str
    old_value: str
    new_value: str
    reason: str


def load_corrections(path: Path) -> list[Correction]:
    corrections = []
    for line, row in read_csv_table(path, COLUMNS, "a corrections file"):
        for column in ("file", "row_key", "column", "reason"):
            if not row[column].strip():
                raise UserError("empty cell; every correction needs a file, row key, column and reason",
                                Location(str(path), line, column))
        corrections.append(Correction(
            file=row["file"].strip(), row_key=row["row_key"].strip(), column=row["column"].strip(),
            old_value=row["old_value"], new_value=row["new_value"], reason=row["reason"].strip(),
            origin=f"{path.name} row {line}",
        ))
    return corrections


def apply_corrections(rows: list[dict[str, str]], row_numbers: list[int], keys: list[str], source: Path,
                      corrections: list[Correction]) -> list[AppliedCorrection]:
    """Apply, in place, the corrections meant for ``source``; return what was changed."""
    applied = []
    by_key: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        by_key.setdefault(key, []).append(index)
    for correction in corrections:
        if not fnmatch.fnmatchcase(source.name, correction.file):
            continue
        matches = by_key.get(correction.row_key, [])
        if len(matches) != 1:
            found = "no row" if not matches else f"{len(matches)} rows"
            raise UserError(f"correction ({correction.origin}) names row {correction.row_key!r}, "
                            f"but {found} of {source.name} has that key", source)
        index = matches[0]
        row = rows[index]
        where = Location(str(source), row_numbers[index], correction.column)
        if correction.column not in row:
            raise UserError(f"correction ({correction.origin}) names a column the file does not have", where)
        if row[correction.column] != correction.old_value:
            raise UserError(
                f"correction ({correction.origin}) expects {correction.old_value!r} but the file has "
                f"{row[correction.column]!r}; the upstream file changed, so review and update the correction",
                where,
            )
        row[correction.column] = correction.new_value
        applied.append(AppliedCorrection(source.name, row_numbers[index], correction.row_key, correction.column,
                                         correction.old_value, correction.new_value, correction.reason))
    return applied
