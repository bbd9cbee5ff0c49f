"""Workbooks are read whole, whatever used range the file declares.

Read-only mode reads the range a sheet's ``<dimension>`` declares, and some applications write it wrong; a returned
post-edit workbook or a template workbook read that way lost its rows and columns past that range, silently.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from hypothesis import given, settings, strategies as st
from openpyxl import Workbook

from core.workbooks import read_sheets

CELLS = st.one_of(st.none(), st.text(st.characters(categories=("L", "N")), min_size=1, max_size=5))
GRIDS = st.lists(st.lists(CELLS, min_size=1, max_size=5), min_size=1, max_size=6)
DECLARED = st.sampled_from(["A1", "A1:B2", "B2:C3", "A1:Z99"])


def written(grid: list[list[str | None]], path: Path, declared: str) -> Path:
    """``grid`` as a one-sheet workbook whose sheet declares ``declared`` as its used range."""
    workbook = Workbook()
    for row in grid:
        workbook.active.append(row)
    plain = path.with_suffix(".plain.xlsx")
    workbook.save(plain)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb'<dimension ref="[^"]*"/>', f'<dimension ref="{declared}"/>'.encode(), data)
            target.writestr(item, data)
    return path


@settings(max_examples=30, deadline=None)
@given(grid=GRIDS, declared=DECLARED)
def test_every_cell_is_read_whatever_range_the_sheet_declares(tmp_path_factory, grid, declared):
    path = written(grid, tmp_path_factory.mktemp("wb") / "book.xlsx", declared)
    (rows,) = read_sheets(path).values()
    # What the sheet holds: up to its last row with a value, each row as wide as the widest holding one.
    last = max((i for i, row in enumerate(grid) if any(v is not None for v in row)), default=-1)
    width = max((j + 1 for row in grid for j, v in enumerate(row) if v is not None), default=0)
    held = [["" if v is None else v for v in row[:width]] + [""] * (width - len(row[:width])) for row in grid[:last + 1]]
    assert [row[:width] for row in rows if any(row)] == [row for row in held if any(row)]
    assert all(row[width:] == [""] * (len(row) - width) for row in rows)


def test_a_full_sheet_declared_as_a1_b2_is_read_whole(tmp_path):
    grid = [["id", "source", "post-edit"], ["1", "a", "가"], ["2", "b", "나"]]
    (rows,) = read_sheets(written(grid, tmp_path / "book.xlsx", "A1:B2")).values()
    assert rows == grid
