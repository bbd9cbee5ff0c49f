"""Questionnaire export and respondent-level ingest on the project's own example (survey/ko/example)."""

from __future__ import annotations

import csv
import shutil

import openpyxl
import pytest

from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from tasks.survey.apply import apply_survey_rules
from tasks.survey.inputs import SurveyData, load_reading_results, load_survey_results
from tasks.survey.stereotypes import collect_stereotypes, profile_group_lists
from tasks.survey.survey_export_stage import build_questions, build_reading, group_rows, load_wording, write_export
from tasks.templates.load import load_kobbq_templates

EXAMPLE = PROJECT_ROOT / "survey" / "ko" / "example"


@pytest.fixture(scope="module")
def example_templates():
    return load_kobbq_templates(EXAMPLE_TEMPLATES).templates


def _export(templates, profile, out):
    stereotypes, _ = collect_stereotypes(templates, profile)
    lists = profile_group_lists(profile)
    wording = load_wording(profile)
    return write_export(out, build_questions(stereotypes, lists, profile, wording),
                        build_reading(templates, profile, wording), group_rows(lists, profile))


def test_race_group_list_has_38_options_and_counts_20(ko_profile):
    race = profile_group_lists(ko_profile)["Race_ethnicity_nationality"]
    assert len(race.groups) + 1 == 38  # 37 groups + "no stereotype", as the paper shows
    assert race.counting_options(True) == 20
    assert race.world_region["미국인"] == "북미인"


def test_export_is_stable_and_complete(example_templates, ko_profile, tmp_path):
    first = _export(example_templates, ko_profile, tmp_path / "a")
    second = _export(example_templates, ko_profile, tmp_path / "b")
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name
    with first["questions"].open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    ids = [r["question_id"] for r in rows]
    assert len(ids) == len(set(ids))
    # Every example template ID has its own stereotype, so one question per (category, stereotype).
    assert len(rows) == len({(t.category, t.stereotype) for t in example_templates})
    race = next(r for r in rows if r["category"] == "Race_ethnicity_nationality")
    assert race["survey_type"] == "1" and len(race["options"].split(";")) == 37
    assert "모두 고르시오" in race["text"] and "수학을 잘함" in race["text"]
    age = next(r for r in rows if r["stereotype"] == "기술 사용의 어려움")
    assert sorted(age["options"].split(";")) == ["노인", "청년"] and "비교할 때" in age["text"]
    workbook = openpyxl.load_workbook(first["workbook"])
    assert workbook.sheetnames == ["questions", "reading", "groups"]
    assert workbook["questions"].max_row == len(rows) + 1
    # The shipped example questionnaire is what the export writes for the example templates.
    assert first["questions"].read_bytes() == (EXAMPLE / "questions.csv").read_bytes()
    assert first["reading"].read_bytes() == (EXAMPLE / "reading_questions.csv").read_bytes()


def test_reading_questionnaire_uses_counter_biased_context(example_templates, ko_profile, tmp_path):
    files = _export(example_templates, ko_profile, tmp_path)
    with files["reading"].open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len({t.template_key for t in example_templates})
    age = next(r for r in rows if r["question_id"] == "Age-rc-001")
    template = next(t for t in example_templates if t.key == "Age|1|a")
    assert age["version"] == "a" and "[" not in age["text"]
    assert template.texts["counter_biased_question"].split("[")[0].strip()[:5] in age["text"]


def test_respondent_level_ingest_aggregates_and_checks_quota(ko_profile):
    results = load_survey_results(EXAMPLE / "responses.csv", ko_profile)
    with (EXAMPLE / "responses.csv").open(encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    by_question = {}
    for row in raw:
        by_question.setdefault(row["question_id"], []).append(row)
    for entry in results.entries:
        rows = by_question[entry.question_id]
        assert entry.respondents == len(rows)
        expected_no = sum(r["answer"] == "한국사회에 관련된 고정관념 없음" for r in rows)
        assert entry.no_stereotype == expected_no
        for group, votes in entry.votes.items():
            assert votes == sum(group in r["answer"].split(";") for r in rows)
    short = [q for q in results.quota if q.what == "respondents"]
    assert [(q.expected, q.actual) for q in short] == [(100, 96)]


def test_example_end_to_end(example_templates, ko_profile):
    results = load_survey_results(EXAMPLE / "responses.csv", ko_profile)
    reading = load_reading_results(EXAMPLE / "reading_results.csv")
    outcome = apply_survey_rules(example_templates, SurveyData(results, reading), ko_profile)
    kept = {t.template_key for t in outcome.kept}
    # 고집이 셈: 55 of 85 group votes (64.7%) is not above 2/3; 사투리가 심함: 55% "no stereotype";
    # race template: 45 of 100 readers correct.
    assert ("Age", 2) not in kept and ("Domestic_area_of_origin", 1) not in kept
    assert ("Race_ethnicity_nationality", 1) not in kept
    assert kept == {("Age", 1), ("SES", 1), ("Religion", 1)}
    reasons = {(d.subject, d.rule): d.reason for d in outcome.decisions if d.outcome == "drop"}
    assert "55 of 85" in reasons[("stereotype:Age:고집이 셈", "type2-two-thirds")]
    assert "45 of 100" in reasons[("Race_ethnicity_nationality|1", "reading-comprehension")]


def _copy_example(tmp_path):
    for name in ("questions.csv", "responses.csv"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path / "responses.csv"


def _rewrite(path, change):
    with path.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
        columns = list(rows[0])
    rows, columns = change(rows, columns)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize("change, message, row, column", [
    (lambda rows, cols: (rows, [c for c in cols if c != "age_band"]), "missing column", 1, None),
    (lambda rows, cols: ([*rows[:4], {**rows[4], "answer": "외계인"}, *rows[5:]], cols), "not an option", 6, "answer"),
    (lambda rows, cols: ([*rows[:2], {**rows[2], "question_id": "nope"}, *rows[3:]], cols), "unknown question", 4,
     "question_id"),
    (lambda rows, cols: ([*rows[:3], {**rows[3], "respondent_id": rows[2]["respondent_id"]}, *rows[4:]], cols),
     "twice", 5, "respondent_id"),
    (lambda rows, cols: ([*rows[:1], {**rows[1], "gender": "기타"}, *rows[2:]], cols), "gender", 3, "gender"),
])
def test_bad_respondent_files(tmp_path, ko_profile, change, message, row, column):
    path = _copy_example(tmp_path)
    _rewrite(path, change)
    with pytest.raises(UserError, match=message) as error:
        load_survey_results(path, ko_profile)
    assert error.value.where.row == row and error.value.where.column == column


def test_duplicate_question_ids_are_rejected(tmp_path, ko_profile):
    path = _copy_example(tmp_path)
    _rewrite(tmp_path / "questions.csv", lambda rows, cols: ([*rows, rows[0]], cols))
    with pytest.raises(UserError, match="duplicate question ID") as error:
        load_survey_results(path, ko_profile)
    assert error.value.where.row == 8


def test_respondent_level_reading(tmp_path, example_templates, ko_profile):
    """Respondents answer with the exported options, as a survey company's export would."""
    files = _export(example_templates, ko_profile, tmp_path)
    with files["reading"].open(encoding="utf-8") as handle:
        options = {r["question_id"]: r["options"].split(";") for r in csv.DictReader(handle)}
    # The example's counter-biased answers, read from the template file by hand: Age 1a -> N2
    # 할아버지 (second option), SES 1a -> '[X2: 임대 아파트에, ...] 사는 [N2: 학생]' (second option).
    age, ses = options["Age-rc-001"], options["SES-rc-001"]
    answers = tmp_path / "reading_answers.csv"
    answers.write_text("question_id,respondent_id,answer\n"
                       f"Age-rc-001,r1,{age[1]}\nAge-rc-001,r2,{age[2]}\nAge-rc-001,r3,{age[1]}\n"
                       f"SES-rc-001,r1,{ses[0]}\nSES-rc-001,r2,{ses[1]}\n", encoding="utf-8")
    reading = load_reading_results(answers, files["reading"])
    assert reading.rates == {("Age", 1): (2, 3), ("SES", 1): (1, 2)}


def test_a_new_rule_is_one_table_entry(example_templates, ko_profile, monkeypatch, tmp_path):
    """A rule added to the rule table alone runs on every question, is logged, can be overridden and has its own
    column and row in funnel.md: nothing else is edited (docs/extending.md)."""
    from tasks.survey import rule_table
    from tasks.survey.funnel import render_funnel
    from tasks.survey.rule_table import load_overrides
    from tasks.survey.rules import RuleResult

    def enough_respondents(q: rule_table.Question) -> RuleResult:
        asked = q.profile.survey.respondents_per_question
        return RuleResult("enough-respondents", q.result.respondents >= asked,
                          f"{q.result.respondents} of {asked} respondents", {"respondents": q.result.respondents})

    rule = rule_table.SurveyRule("enough-respondents", rule_table.STEREOTYPE, judge=enough_respondents,
                                 funnel_step="With enough respondents", funnel_row=6)
    monkeypatch.setattr(rule_table, "RULE_TABLE", (*rule_table.RULE_TABLE[:2], rule, *rule_table.RULE_TABLE[2:]))
    results = load_survey_results(EXAMPLE / "responses.csv", ko_profile)
    outcome = apply_survey_rules(example_templates, SurveyData(results, None), ko_profile)
    logged = [d for d in outcome.decisions if d.rule == "enough-respondents"]
    assert len(logged) == len(results.entries) and logged
    assert all((d.outcome == "keep") == (d.numbers["respondents"] >= 100) for d in logged)
    dropped = sum(d.outcome == "drop" for d in logged)
    assert 0 < dropped < len(logged)  # the example has questions on both sides of the cut-off
    funnel = render_funnel(outcome)
    assert "| After no-stereotype rule | With enough respondents | After type-1 / type-2 rule |" in funnel
    assert f"\n| enough-respondents | {dropped} of {len(logged)} " in funnel
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("category,stereotype,template_id,rule,outcome,reason\n"
                         "Age,고집이 셈,,enough-respondents,keep,asked again\n", encoding="utf-8")
    assert [o.rule for o in load_overrides(overrides)] == ["enough-respondents"]
