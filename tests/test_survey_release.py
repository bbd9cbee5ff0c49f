"""The survey rules on the released KoBBQ results and templates, and the ingest's bad-input errors.

Expected figures come from the domain brief's own check of the release (section 5) and the
paper, not from this code: 184 two-group results, 146 of the 148 surviving type-2 stereotypes
kept, a mean "no stereotype" share of 18.8%, one released stereotype without a survey entry.
"""

from __future__ import annotations

import json
import re

import pytest

from core.errors import UserError
from tasks.survey.apply import apply_survey_rules
from tasks.survey.funnel import render_group_check
from tasks.survey.inputs import SurveyData, SurveyInputs, load_survey_results
from tasks.survey.rule_table import load_overrides
from tasks.survey.funnel import mean_no_stereotype_share, render_funnel
from tasks.survey.survey_stage import FUNNEL, survey_stage
from tasks.templates.load import load_kobbq_templates

MISSING = "불공정한 신체 능력 우위로 운동 시합에서 배제됨"


@pytest.fixture(scope="module")
def released(kobbq_templates_tsv, survey_result_json, ko_profile):
    templates = load_kobbq_templates(kobbq_templates_tsv).templates
    results = load_survey_results(survey_result_json, ko_profile)
    return templates, results, apply_survey_rules(templates, SurveyData(results), ko_profile, allow_unmatched=True)


def test_released_results_load(released, survey_result_json):
    _, results, _ = released
    raw = json.loads(survey_result_json.read_text(encoding="utf-8"))
    two_group = sum(len(e["survey_stats"]) == 3 for e in raw)
    assert two_group == 184
    assert sum(e.survey_type == 2 for e in results.entries) == 184
    # One identical repeat (Religion '낮은 여성 인권') is counted once and noted.
    assert len(results.entries) == len(raw) - 1 and len(results.notes) == 1
    assert round(float(mean_no_stereotype_share(released[2])) * 100, 1) == 18.8


def test_type1_equal_share_formulas_on_the_released_results(released, ko_profile):
    """respondents / options drops 7 type-1 stereotypes (7 of 84 = the paper's 8.3%); the paper's
    wording, total votes / options, drops 22. The ko profile uses the first and says why."""
    from tasks.survey.stereotypes import profile_group_lists
    from tasks.survey.rules import type1_rule

    _, results, outcome = released
    lists = profile_group_lists(ko_profile)
    type1 = [e for e in results.entries if e.survey_type == 1]
    assert len(type1) == 83  # 84 entries, one identical repeat
    dropped = {}
    for basis in ("respondents", "votes"):
        settings = ko_profile.survey.model_copy(update={"type1_equal_share": basis})
        dropped[basis] = sum(not type1_rule(e.votes, e.no_stereotype, e.respondents,
                                            lists[e.category].counting_options(True), settings)[0].keep
                             for e in type1)
    assert dropped == {"respondents": 7, "votes": 22}
    assert ko_profile.survey.type1_equal_share == "respondents"
    funnel = render_funnel(outcome)
    assert 'Used: `type1_equal_share = "respondents"`' in funnel and "8.3%" in funnel


def test_group_check_reproduces_the_type2_check(released):
    report = render_group_check(released[2])
    assert "with a released template of the same stereotype text: **148**" in report
    assert "Kept by the rules: **146 of 148**" in report
    # Both rule-dropped results are listed with their numbers.
    assert "청년 40, 중장년, 노인 21, no stereotype 39" in report
    assert "남성 37, 여성 34, no stereotype 29" in report


def test_stereotype_without_result_is_reported_and_dropped(released):
    templates, _, outcome = released
    subject = f"stereotype:Gender_identity:{MISSING}"
    rows = [d for d in outcome.decisions if d.subject == subject and d.rule == "survey-result-present"]
    assert len(rows) == 1 and rows[0].outcome == "drop" and "no survey result" in rows[0].reason
    kept_ids = {t.template_key for t in outcome.kept}
    missing_ids = {t.template_key for t in templates if t.stereotype == MISSING}
    assert missing_ids and not missing_ids & kept_ids
    assert MISSING in render_group_check(outcome)


def test_decisions_cover_every_stereotype_and_template(released):
    templates, _, outcome = released
    template_ids = {t.template_key for t in templates}
    decided = {d.subject for d in outcome.decisions if d.rule == "stereotype-survey"}
    assert decided == {f"{c}|{i}" for c, i in template_ids}
    for evaluation in outcome.stereotypes:
        rules = {d.rule for d in outcome.decisions
                 if d.subject == f"stereotype:{evaluation.stereotype.category}:{evaluation.stereotype.text}"}
        assert {"survey-type", "survey-result-present"} <= rules
    # Kept rows keep input order.
    positions = [templates.index(t) for t in outcome.kept]
    assert positions == sorted(positions)


def test_type1_candidates_beside_release(released):
    report = render_group_check(released[2])
    section = report.split("## Type 1")[1].split("\n## ")[0]
    # The race stereotype '높은 범죄율' is listed with the rule's candidates and the release's groups.
    line = next(l for l in section.splitlines() if "| 높은 범죄율 |" in l)
    assert "중국인" in line and "오세아니아인" in line
    assert re.search(r"Released target groups equal to the rule's targets: \d+ of \d+", section)


def test_override_keeps_and_is_marked(released, ko_profile, tmp_path):
    templates, results, _ = released
    path = tmp_path / "overrides.csv"
    path.write_text("category,stereotype,template_id,rule,outcome,reason\n"
                    f"Gender_identity,{MISSING},,survey-result-present,keep,asked in a later survey wave\n",
                    encoding="utf-8")
    outcome = apply_survey_rules(templates, SurveyData(results, overrides=load_overrides(path)), ko_profile, allow_unmatched=True)
    marked = [d for d in outcome.decisions if d.override]
    assert marked and all("asked in a later survey wave" in d.reason for d in marked)
    assert {("Gender_identity", 13), ("Gender_identity", 14)} <= {t.template_key for t in outcome.kept}
    assert "## Overrides" in render_funnel(outcome) and "asked in a later survey wave" in render_funnel(outcome)


def test_the_stage_reports_name_an_override_file_by_its_name_only(released, survey_result_json, ko_profile,
                                                                  tmp_path):
    """The survey stage's reports are inputs of the release, hashed in its card: an override's absolute path in
    funnel.md made the real KoBBQ's card differ between two checkouts."""
    templates, _, _ = released
    path = tmp_path / "elsewhere" / "overrides.csv"
    path.parent.mkdir()
    path.write_text("category,stereotype,template_id,rule,outcome,reason\n"
                    f"Gender_identity,{MISSING},,survey-result-present,keep,asked in a later survey wave\n",
                    encoding="utf-8")
    stage = survey_stage(templates, SurveyInputs(survey_result_json, overrides=path, allow_unmatched=True), ko_profile)
    assert "override (overrides.csv, row 2)" in stage.reports[FUNNEL]
    assert not [name for name, text in stage.reports.items() if str(tmp_path) in text]


def test_stale_override_is_an_error(released, ko_profile, tmp_path):
    templates, results, _ = released
    path = tmp_path / "overrides.csv"
    path.write_text("category,stereotype,template_id,rule,outcome,reason\n"
                    "Age,없는 고정관념,,type2-two-thirds,keep,typo\n", encoding="utf-8")
    with pytest.raises(UserError, match="matches no candidate"):
        apply_survey_rules(templates, SurveyData(results, overrides=load_overrides(path)), ko_profile, allow_unmatched=True)


def test_reading_override_without_reading_results_is_an_error(released, ko_profile, tmp_path):
    """It would change nothing, silently: a maintainer's decision must never be ignored."""
    templates, results, _ = released
    path = tmp_path / "overrides.csv"
    path.write_text("category,stereotype,template_id,rule,outcome,reason\n"
                    "Age,,1,reading-comprehension,keep,re-tested by hand\n", encoding="utf-8")
    with pytest.raises(UserError, match="reading-comprehension rule of Age\\|1, but no reading"):
        apply_survey_rules(templates, SurveyData(results, overrides=load_overrides(path)), ko_profile, allow_unmatched=True)


def _write(tmp_path, entries):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("entries, message, row", [
    ([{"category": "Age", "stereotype": "x", "survey_stats": {"노인": 50, "청년": 30, "no_stereo": 10}}],
     "add up to 90", 1),
    ([{"category": "Age", "stereotype": "x", "survey_stats": {"노인": 50, "청년": 40, "no_stereo": 10}},
      {"category": "Religion", "stereotype": "y",
       "survey_stats": {"기독교인": 5, "외계인": 3, "불교인": 1, "no_stereo": 10}}], "unknown group name", 2),
    ([{"category": "Nowhere", "stereotype": "x", "survey_stats": {"a": 50, "b": 50, "no_stereo": 0}}],
     "unknown category", 1),
    ([{"category": "Age", "stereotype": "x", "survey_stats": {"노인": 50, "청년": 40, "no_stereo": 10}},
      {"category": "Age", "stereotype": "x", "survey_stats": {"노인": 40, "청년": 50, "no_stereo": 10}}],
     "duplicate question", 2),
])
def test_bad_results_name_the_entry(tmp_path, ko_profile, entries, message, row):
    with pytest.raises(UserError, match=message) as error:
        load_survey_results(_write(tmp_path, entries), ko_profile)
    assert error.value.where.row == row
