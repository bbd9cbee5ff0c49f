"""The reading-comprehension questionnaire: the release's counter-biased disambiguated sample of
each template's first fill, with the release's choices as options, and its answers checked."""

from __future__ import annotations

import ast

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES
from tasks.survey.inputs import load_reading_results
from core.tables import csv_for_people
from tasks.survey.survey_export_stage import READING_EXPORT_COLUMNS, build_reading, load_wording
from tasks.templates.load import load_kobbq_templates


@pytest.fixture(scope="module")
def example_reading(ko_profile):
    templates = load_kobbq_templates(EXAMPLE_TEMPLATES).templates
    return {r["question_id"]: r for r in build_reading(templates, ko_profile, load_wording(ko_profile))}


def test_example_options_are_the_filled_answers(example_reading):
    # Hand-filled from kobbq_example_templates.tsv, version a, first filler of every slot:
    # SES 1a answers '[X1: 강남의 고급 아파트에, ...] 사는 [N1: 학생]' / '[X2: 임대 아파트에, ...] 사는 [N2: 학생]'.
    ses = example_reading["SES-rc-001"]
    assert ses["options"] == "강남의 고급 아파트에 사는 학생;임대 아파트에 사는 학생;알 수 없음"
    assert ses["correct_answer"] == "임대 아파트에 사는 학생"
    race = example_reading["Race_ethnicity_nationality-rc-001"]
    assert race["options"] == "미국인 유학생;인도인 유학생;알 수 없음"
    assert race["correct_answer"] == "인도인 유학생"
    for row in example_reading.values():
        assert row["correct_answer"] in row["options"].split(";"), row["question_id"]


def test_real_templates_every_key_is_an_option(kobbq_templates_tsv, ko_profile):
    templates = load_kobbq_templates(kobbq_templates_tsv).templates
    rows = build_reading(templates, ko_profile, load_wording(ko_profile))
    assert len(rows) == 269  # one per template ID of the release
    missing = [r["question_id"] for r in rows if r["correct_answer"] not in r["options"].split(";")]
    assert missing == []
    age = next(r for r in rows if r["question_id"] == "Age-rc-004")
    assert age["correct_answer"] == "78세 남성"  # the release's dis-cnt answer of age-004a-001
    assert set(age["options"].split(";")) == {"78세 남성", "22세 남성", "알 수 없음"}
    assert "78세 남성" in age["text"] and "22세 남성" in age["text"]


def test_reading_rows_match_the_released_sample(kobbq_templates_tsv, ko_profile):
    """Options, key, context and question are those of sample <id><v>-001-dis-cnt of the release."""
    from tasks.release.assemble import expand_release

    templates = load_kobbq_templates(kobbq_templates_tsv).templates
    rows = {r["question_id"]: r for r in build_reading(templates, ko_profile, load_wording(ko_profile))}
    columns = expand_release(templates, ko_profile, ko_profile.release.seed).expansion.columns
    index = {sid: i for i, sid in enumerate(columns["sample_id"])}
    for sample_id, question_id in (("age-004a-001-dis-cnt", "Age-rc-004"), ("ses-001a-001-dis-cnt", "SES-rc-001"),
                                   ("religion-018a-001-dis-cnt", "Religion-rc-018")):
        i = index[sample_id]
        row = rows[question_id]
        assert row["options"].split(";") == ast.literal_eval(columns["choices"][i])
        assert row["correct_answer"] == columns["answer"][i]
        assert columns["context"][i] in row["text"] and columns["question"][i] in row["text"]


def _write_key(path, rows):
    path.write_bytes(csv_for_people(READING_EXPORT_COLUMNS, rows))
    return path


def _answers(path, lines):
    path.write_text("question_id,respondent_id,answer\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_a_key_that_is_not_an_option_is_rejected(tmp_path, example_reading):
    rows = list(example_reading.values())
    rows[2] = {**rows[2], "options": "학생;학생;알 수 없음"}
    key = _write_key(tmp_path / "reading_questions.csv", rows)
    answers = _answers(tmp_path / "answers.csv", [f"{rows[0]['question_id']},r1,알 수 없음"])
    with pytest.raises(UserError, match="not among the question's options") as error:
        load_reading_results(answers, key)
    assert (error.value.where.file, error.value.where.row, error.value.where.column) == \
        (str(key), 4, "correct_answer")


def test_an_answer_that_is_not_an_option_is_rejected(tmp_path, example_reading):
    key = _write_key(tmp_path / "reading_questions.csv", list(example_reading.values()))
    answers = _answers(tmp_path / "answers.csv", ["SES-rc-001,r1,알 수 없음", "SES-rc-001,r2,학생"])
    with pytest.raises(UserError, match="not an option of reading question SES-rc-001") as error:
        load_reading_results(answers, key)
    assert (error.value.where.file, error.value.where.row, error.value.where.column) == \
        (str(answers), 3, "answer")


def test_a_non_numeric_template_id_in_the_questionnaire(tmp_path, example_reading):
    rows = list(example_reading.values())
    rows[1] = {**rows[1], "template_id": "x1"}
    key = _write_key(tmp_path / "reading_questions.csv", rows)
    answers = _answers(tmp_path / "answers.csv", [f"{rows[0]['question_id']},r1,알 수 없음"])
    with pytest.raises(UserError, match="not a whole number") as error:
        load_reading_results(answers, key)
    assert (error.value.where.row, error.value.where.column) == (3, "template_id")
