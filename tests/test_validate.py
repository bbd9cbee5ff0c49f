"""Template validation on realistic broken files: every problem named with its row and column."""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.corrections import Correction, load_corrections
from tasks.templates.load import load_kobbq_templates, read_tsv
from tasks.templates.stage_templates import warnings_said
from tasks.templates.validate import validate_loaded


def rewrite(tmp_path: Path, edit) -> Path:
    """The embedded example with one edit applied to its rows (a list of dicts)."""
    header, rows, _ = read_tsv(EXAMPLE_TEMPLATES)
    rows = edit(rows) or rows
    path = tmp_path / "broken.tsv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def findings(path: Path, profile, corrections=None):
    return validate_loaded(load_kobbq_templates(path, corrections or []), profile)


def codes(found, severity="error"):
    return {(f.code, f.where.row, f.where.column) for f in found if f.severity == severity}


def test_the_embedded_example_is_clean(ko_profile):
    assert findings(EXAMPLE_TEMPLATES, ko_profile) == []


def set_cell(row_index, column, value):
    def edit(rows):
        rows[row_index][column] = value
    return edit


@pytest.mark.parametrize("column,value,code", [
    ("Ambiguous_context", "[W1: 주민센터, 은행] 키오스크 앞에서 [N1: 대학생과] [N2: 할아버지가, 할머니가] 서 있었습니다.", "slot-length"),
    ("Biased_question", "누가 [W9: 키오스크, 기계]를 못 썼습니까?", "slot-undeclared"),
    ("Disambiguating_context", "[N1: 대학생은, 고등학생은 헤맸고 [N2: 할아버지가, 할머니가] 도왔습니다.", "brackets"),
    ("version", "e", "bad-version"),
    ("Label_annotation", "XX", "bad-label"),
    ("Stereotype", "", "empty-cell"),
    ("Biased_question_answer", "대학생", "answer-person"),
])
def test_each_broken_cell_is_reported_where_it_is(tmp_path, ko_profile, column, value, code):
    path = rewrite(tmp_path, set_cell(0, column, value))
    assert (code, 2, column) in codes(findings(path, ko_profile))


def test_unpaired_and_duplicate_versions(tmp_path, ko_profile):
    def edit(rows):
        rows[1]["version"] = "a"  # Age 1: two a rows, no b
    found = codes(findings(rewrite(tmp_path, edit), ko_profile))
    assert ("duplicate", 3, "ID") in found
    assert ("unpaired", 2, "version") in found


def test_non_nfc_text_is_an_error(tmp_path, ko_profile):
    decomposed = unicodedata.normalize("NFD", "누가 키오스크 사용에 서툴렀습니까?")
    found = codes(findings(rewrite(tmp_path, set_cell(0, "Biased_question", decomposed)), ko_profile))
    assert ("not-nfc", 2, "Biased_question") in found


def test_item_that_does_not_start_with_its_filler_is_a_warning(tmp_path, ko_profile):
    path = rewrite(tmp_path, set_cell(0, "Counter-biased_question_answer", "[N2: 노인, 할머니]"))
    found = findings(path, ko_profile)
    assert ("item-not-filler", 2, "Counter-biased_question_answer") in codes(found, "warning")
    assert not codes(found)


def test_a_row_that_expands_to_a_huge_number_of_samples_is_a_warning_with_its_product(tmp_path, ko_profile):
    """Before: a row of 1.6 million samples (1.3 GB) built without a word about its size."""
    places = ", ".join(f"장소{n}" for n in range(7000))

    def edit(rows):
        rows[0]["Lexical_diversity"] = f"W1: [{places}]"
        rows[0]["Ambiguous_context"] = rows[0]["Ambiguous_context"].replace("[W1: 주민센터, 은행]", f"[W1: {places}]")
    found = findings(rewrite(tmp_path, edit), ko_profile)
    assert [(f.severity, f.where.row, f.message) for f in found if f.code == "row-size"] == [
        ("warning", 2, "this row expands to 112,000 samples (2 N1 x 2 N2 x 7,000 W1, x 4), more than 100,000: check "
                       "its slot lists")]
    assert not codes(found)
    assert warnings_said(found) == "1 warning(s): row-size 1"  # what a build's line says of them


def test_missing_column_is_fatal_with_the_file_named(tmp_path):
    path = tmp_path / "no_names.tsv"
    header, rows, _ = read_tsv(EXAMPLE_TEMPLATES)
    path.write_text("\t".join(h for h in header if h != "Names") + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="missing required column.*Names") as info:
        load_kobbq_templates(path)
    assert str(path) in info.value.render()


@pytest.mark.realdata
def test_real_release_validates_only_after_its_recorded_corrections(kobbq_templates_tsv, kobbq_templates_first_tsv,
                                                                    ko_profile):
    corrections = load_corrections(DEFAULT_CORRECTIONS)
    assert not codes(findings(kobbq_templates_tsv, ko_profile, corrections))
    assert not codes(findings(kobbq_templates_first_tsv, ko_profile, corrections))
    raw = codes(findings(kobbq_templates_first_tsv, ko_profile))
    assert sum(1 for code, *_ in raw if code == "bad-version") == 3  # the three race rows written 'biased'
    warnings = findings(kobbq_templates_tsv, ko_profile, corrections)
    assert sum(1 for f in warnings if f.code == "control-character") == 10


@pytest.mark.realdata
def test_stale_correction_is_refused(kobbq_templates_tsv):
    stale = Correction("KoBBQ_templates.tsv", "Age|1|a", "Stereotype", "not the text", "x", "test", "test row 2")
    with pytest.raises(UserError, match="row 2, column Stereotype: correction .* expects .not the text."):
        load_kobbq_templates(kobbq_templates_tsv, [stale])


@pytest.mark.realdata
def test_bbq_loader_reads_every_category_and_names_typos(bbq_templates_dir):
    templates, found = load_bbq_templates(bbq_templates_dir)
    assert len({t.subject for t in templates}) == 275
    malformed = {(f.where.file, f.where.row) for f in found if f.code == "placeholder-malformed"}
    assert ("new_templates - Nationality.csv", 24) in malformed  # '{{{NAME2}}'
    assert {t.category for t in templates} >= {"Race_ethnicity", "Nationality", "Religion"}
