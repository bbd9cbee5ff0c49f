"""A published release as downloaded: the public sample files, without the manifest a build writes.

A researcher comparing with published numbers scores against the files everyone else used:
KoBBQ's ``data/`` folder (``KoBBQ_test_samples.tsv`` and/or ``KoBBQ_all_samples.tsv``, the columns
a build writes too), or EsBBQ's and CaBBQ's per-category files (``data_es/<Category>.full.csv``,
or those files in the folder given). Nothing in such a folder says which culture it is, so the
command's ``--profile`` does; the samples are then checked exactly as a build's are (columns,
sample IDs, answers among the choices), and the reader's notes say the folder was read this way.
"""

from __future__ import annotations

import ast
import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from core.errors import Location, UserError
from core.fingerprint import sha256_file
from core.release_folder import MANIFEST
from core.profile import Profile
from core.text_files import check_input_file
from tasks.evaluation.bbq_columns import COLUMNS
from tasks.release.category_csv import category_file_name, category_folder



def is_published_folder(folder: Path) -> bool:
    """A folder without the manifest of `kobbq build`: read as a published release (it needs ``--profile``)."""
    return not (folder / MANIFEST).exists()


def require_profile(folder: Path, profile: str | None) -> str:
    if profile is None:
        raise UserError(f"no {MANIFEST} here, so this is not a release folder written by `kobbq build`; to score a "
                        "published release as downloaded (KoBBQ's data/ folder, EsBBQ's or CaBBQ's per-category "
                        "files), name its culture with --profile (ko, es, ca, or a profile file)", folder)
    return profile


def published_note(profile: Profile, files: list[Path]) -> str:
    names = ", ".join(path.name for path in files)
    return (f"a published release as downloaded (no {MANIFEST}), read as profile {profile.name} (--profile): "
            f"{names}")


@dataclass
class CategoryFiles:
    """EsBBQ-style per-category files of a downloaded release: where they are, which, and their samples."""

    folder: Path
    files: list[Path]
    samples: pd.DataFrame

    @property
    def digest(self) -> str:
        """One sha256 for the set: of the files' names and sha256s, in profile order."""
        lines = "".join(f"{sha256_file(path)}  {path.name}\n" for path in self.files)
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def find_category_files(folder: Path, profile: Profile) -> tuple[Path, list[Path]]:
    """The profile's ``<Category>.full.csv`` files, in ``folder/data_xx`` (a downloaded repository) or in ``folder``
    itself (its ``data_xx`` folder), in profile order; at least one must be there."""
    for place in (folder / category_folder(profile.language), folder):
        files = [place / category_file_name(name) for name in profile.category_names
                 if (place / category_file_name(name)).is_file()]
        if files:
            return place, files
    expected = ", ".join(category_file_name(name) for name in profile.category_names[:3])
    raise UserError(f"no per-category file of profile {profile.name} here or in its {category_folder(profile.language)}/ "
                    f"({expected}, ...)", folder)


def read_category_files(folder: Path, profile: Profile) -> CategoryFiles:
    """Every per-category file, list columns parsed (as a build's Parquet holds them), in one frame."""
    place, files = find_category_files(folder, profile)
    fmt = profile.templates.workbook
    lists = set(fmt.list_columns) if fmt is not None else set()
    frames = [_read_category_csv(path, lists) for path in files]
    return CategoryFiles(place, files, pd.concat(frames, ignore_index=True))


def _read_category_csv(path: Path, list_columns: set[str]) -> pd.DataFrame:
    """One file; a missing column or a list cell that is not a list literal is an error at its line."""
    check_input_file(path)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise UserError("is empty", path)
        missing = [column for column in COLUMNS if column not in header]
        if missing:
            raise UserError(f"lacks column(s) {', '.join(missing)} of BBQ's column layout", Location(str(path), 1))
        parsed = [i for i, name in enumerate(header) if name in list_columns]
        rows, line = [], reader.line_num
        for row in reader:
            if len(row) != len(header):
                raise UserError(f"has {len(row)} cells, the header {len(header)}", Location(str(path), line + 1))
            for i in parsed:
                row[i] = _list_cell(row[i], Location(str(path), line + 1, header[i]))
            rows.append(row)
            line = reader.line_num
    return pd.DataFrame(rows, columns=header, dtype=object)


def _list_cell(text: str, where: Location) -> list[str]:
    try:
        value = ast.literal_eval(text) if text else []
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, list):
        raise UserError(f"{text[:60]!r} is not a list literal", where)
    return [str(item) for item in value]
