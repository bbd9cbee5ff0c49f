"""Delimited text files, read one way (``read_rows``: UTF-8 with or without a byte-order mark, within the size limits,
a problem named at its file and row) and written atomically; tables people edit in a spreadsheet, as CSV or xlsx
(``read_table``); Markdown tables."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from core.atomic import replacing, write_text
from core.errors import Location, UserError
from core.text_files import read_text
from core.workbooks import read_sheets

MAX_CELL_CHARS = 1 << 20  # 1 Mi characters per cell (the longest real cell has ~1,500)


def read_rows(path: Path, delimiter: str = ",", quoting: int = csv.QUOTE_MINIMAL) -> list[list[str]]:
    """Every row of a delimited UTF-8 file (a byte-order mark is dropped); blank lines read as ``[]``."""
    text = read_text(path)
    csv.field_size_limit(MAX_CELL_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting)
    try:
        return list(reader)
    except csv.Error as exc:
        row = reader.line_num
        if "field larger than field limit" in str(exc):
            raise UserError(f"a cell is longer than {MAX_CELL_CHARS:,} characters, the limit for any input "
                            "cell", Location(str(path), row)) from None
        raise UserError(f"not a readable {'TSV' if delimiter == chr(9) else 'CSV'} file ({exc})",
                        Location(str(path), row)) from None


def read_records(path: Path, delimiter: str = ",") -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header (stripped) and (row number, row) pairs: blank rows skipped, a short row padded with empty strings."""
    rows = read_rows(path, delimiter)
    if not rows:
        return [], []
    header = [h.strip() for h in rows[0]]
    return header, [(number, {name: (values[i] if i < len(values) else "") for i, name in enumerate(header)})
                    for number, values in enumerate(rows[1:], start=2) if values]


def read_csv_table(path: Path, columns: list[str] | tuple[str, ...], what: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs of a curated table; a missing file or column is a UserError."""
    if not Path(path).exists():
        raise UserError(f"{what} does not exist", path)
    header, records = read_records(path)
    if missing := [c for c in columns if c not in header]:
        raise UserError(f"missing column(s) {', '.join(missing)}; {what} needs {', '.join(columns)}", path)
    return records


def read_table(path: Path, required: list[str]) -> tuple[list[dict[str, str]], list[Location]]:
    """Rows of a CSV or the first sheet of an xlsx, stripped and read back from the formula-safe form (``restore``),
    with the location of every row; an empty file, a repeated or missing ``required`` column is a UserError."""
    path = Path(path)
    if not path.exists():
        raise UserError("file does not exist", path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        lines, sheet = read_rows(path), None
    elif suffix in (".xlsx", ".xlsm"):
        sheet, lines = next(iter(read_sheets(path).items()))
    else:
        raise UserError("expected a .csv or .xlsx file", path)
    if not lines:
        raise UserError("empty file; expected a header row", path)
    header = _checked_header(lines[0], required, path, sheet)
    rows, where = [], []
    for number, values in enumerate(lines[1:], start=2):
        if not any(str(v).strip() for v in values):
            continue
        rows.append({h: (restore(values[i].strip()) if i < len(values) else "") for i, h in enumerate(header)})
        where.append(Location(str(path), number, None, sheet))
    return rows, where


def _checked_header(cells: list[str], required: list[str], path: Path, sheet: str | None) -> list[str]:
    header = [h.strip() for h in cells]
    seen: set[str] = set()
    for index, name in enumerate(header):
        if name and name in seen:  # a second column of the same name would silently replace the first
            raise UserError(f"duplicate column {name!r} (column {index + 1})", Location(str(path), 1, name, sheet))
        seen.add(name)
    if missing := [c for c in required if c not in header]:
        raise UserError(f"missing column(s) {', '.join(missing)}; expected {', '.join(required)}",
                        Location(str(path), 1, None, sheet))
    return header


def at_column(where: Location, column: str) -> Location:
    """A row's location (from ``read_table``) narrowed to one of its columns."""
    return Location(where.file, where.row, column, where.sheet)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet would evaluate


def neutralise(cell: str) -> str:
    """A cell a spreadsheet would run as a formula gets a leading apostrophe (shown, never evaluated)."""
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


def restore(cell: str) -> str:
    """The cell ``neutralise`` was given: reading back what this project (or a spreadsheet) wrote."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def csv_for_people(columns: list[str], rows: list[dict[str, str]]) -> bytes:
    """A CSV for people outside the project (the survey company, translators): formula-like cells are
    neutralised as the workbooks keep them text. Release files and the decision log keep data exact."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: neutralise(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows)
    return buffer.getvalue().encode("utf-8")


def delimited_text(header: list[str], rows: Iterable[Sequence[object]], delimiter: str = ",") -> str:
    """Rows as a plain CSV (or TSV: ``delimiter="\\t"``): minimal quoting, ``\\n`` line ends."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], numbers_from: int | None = None
                   ) -> list[str]:
    """A Markdown table's lines: columns from ``numbers_from`` on right-aligned, a ``|`` in a cell escaped."""
    align = ["---:" if numbers_from is not None and i >= numbers_from else "---" for i in range(len(headers))]
    return ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|",
            *("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows)]


def write_csv_rows(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    return write_text(path, delimited_text(header, rows))


def write_tsv_rows(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    """A template-style TSV, written atomically, unquoted (template text has quotes; the loader reads with QUOTE_NONE),
    so a tab or line break in a cell, which would split it, is refused."""
    for row in rows:
        if bad := next((row[c] for c in header if any(ch in row.get(c, "") for ch in "\t\n\r")), None):
            raise UserError(f"cannot write a tab or line break into a TSV cell: {bad[:60]!r}", path)
    with replacing(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None,
                                lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)
