"""Delimited files: one reader with stated limits, and CSVs for people outside the project kept formula-safe."""

from __future__ import annotations

import csv
import io
import re

import pytest

from core.errors import UserError
from core.tables import csv_for_people, read_records, read_rows, read_table, write_tsv_rows


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


def test_an_xlsx_table_reads_its_first_sheet_like_a_csv_and_names_the_sheet(tmp_path):
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "responses"
    for row in (["question_id", " answer "], ["Age-1", " 노인 "], [None, None], ["Age-2", "'=1+1"], [3, None]):
        sheet.append(row)
    workbook.create_sheet("notes").append(["question_id", "ignored"])
    path = tmp_path / "responses.xlsx"
    workbook.save(path)
    rows, where = read_table(path, ["question_id", "answer"])
    # Cells stripped, the blank row skipped (rows keep the sheet's numbers), numbers as text,
    # a formula-safe cell read back as written.
    assert rows == [{"question_id": "Age-1", "answer": "노인"}, {"question_id": "Age-2", "answer": "=1+1"},
                    {"question_id": "3", "answer": ""}]
    assert [(w.row, w.sheet) for w in where] == [(2, "responses"), (4, "responses"), (5, "responses")]
    with pytest.raises(UserError, match="missing column\\(s\\) respondent_id") as error:
        read_table(path, ["question_id", "respondent_id"])
    assert (error.value.where.row, error.value.where.sheet) == (1, "responses")


def test_a_table_in_another_format_or_a_folder_is_refused(tmp_path):
    (tmp_path / "t.txt").write_text("a\n1\n", encoding="utf-8")
    with pytest.raises(UserError, match="expected a .csv or .xlsx file"):
        read_table(tmp_path / "t.txt", [])
    (tmp_path / "t.csv").mkdir()
    with pytest.raises(UserError, match="is a folder; expected a file"):
        read_table(tmp_path / "t.csv", [])


def test_predictions_with_a_byte_order_mark_read_like_without(tmp_path):
    from tasks.evaluation.predictions import read_predictions

    text = "sample_id,prediction\nage-001-amb-bsd-0,노인\nage-001-amb-bsd-1,B\n"
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(text, encoding="utf-8")
    marked.write_text("\ufeff" + text, encoding="utf-8")
    [without] = read_predictions(plain, model="m", prompt=1)
    [with_mark] = read_predictions(marked, model="m", prompt=1)
    assert with_mark.ids == without.ids == ["age-001-amb-bsd-0", "age-001-amb-bsd-1"]
    assert with_mark.values == ["노인", "B"] and with_mark.file_rows == [2, 3]


def test_a_template_tsv_keeps_quotes_as_written_and_refuses_a_tab_in_a_cell(tmp_path):
    rows = [{"ID": "1", "Ambiguous_context": 'The "old" man and the [N1: 손자, 손녀]', "extra": "ignored"}]
    path = write_tsv_rows(tmp_path / "t.tsv", ["ID", "Ambiguous_context", "Notes"], rows)
    assert path.read_text(encoding="utf-8") == 'ID\tAmbiguous_context\tNotes\n1\tThe "old" man and the [N1: 손자, 손녀]\t\n'
    with pytest.raises(UserError, match=re.escape("cannot write a tab or line break into a TSV cell: 'a\\tb'")):
        write_tsv_rows(tmp_path / "bad.tsv", ["ID"], [{"ID": "a\tb"}])
    assert not (tmp_path / "bad.tsv").exists()
