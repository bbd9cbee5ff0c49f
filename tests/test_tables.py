"""Delimited files: one reader with stated limits, and CSVs for people outside the project kept formula-safe."""

from __future__ import annotations

import csv
import io

import pytest

from core.errors import UserError
from core.tables import csv_for_people, read_records, read_rows, read_table


def test_formula_like_cells_are_neutralised_for_people_and_read_back_exactly(tmp_path):
    rows = [{"stereotype": "=HYPERLINK(\"http://x\")", "options": "+82", "note": "-2 votes", "plain": "노인"}]
    data = csv_for_people(["stereotype", "options", "note", "plain"], rows)
    cells = next(iter(csv.DictReader(io.StringIO(data.decode("utf-8")))))
    assert cells == {"stereotype": "'=HYPERLINK(\"http://x\")", "options": "'+82", "note": "'-2 votes", "plain": "노인"}
    path = tmp_path / "questions.csv"
    path.write_bytes(data)
    read, _ = read_table(path, ["stereotype"])
    assert read == rows


def test_byte_order_mark_and_short_rows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("\ufeffa,b\n1\n\n2,3,4\n".encode("utf-8"))
    header, records = read_records(path)
    assert header == ["a", "b"]
    assert records == [(2, {"a": "1", "b": ""}), (4, {"a": "2", "b": "3"})]


def test_a_cell_over_the_limit_names_its_row(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("a\tb\nx\ty\nz\t" + "w" * (1 << 20 + 1) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="a cell is longer than 1,048,576 characters") as error:
        read_rows(path, "\t", csv.QUOTE_NONE)
    assert error.value.where.row == 3
