"""One fate per template: ``kobbq why`` and ``audit.html`` (the fates), ``funnel.md`` and the decision log name the
same rule for every dropped template, the first failing rule in the paper's order, whatever the votes."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.profile import load_profile
from tasks.audit.fates import build_audit_log
from tasks.audit.report import funnel_rows
from tasks.survey.apply import apply_survey_rules
from tasks.survey.funnel import rule_effects
from tasks.survey.inputs import ReadingResults, SurveyData, SurveyInputs
from tasks.survey.rules import RULE_READING
from tasks.templates.load import load_kobbq_templates

SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"


@cache
def example():
    profile = load_profile("ko")
    results = SurveyInputs(SURVEY / "responses.csv", questions=SURVEY / "questions.csv").read(profile).results
    return profile, load_kobbq_templates(EXAMPLE_TEMPLATES).templates, results


@st.composite
def surveys(draw):
    """The example's six questions with other votes (each rule may fail alone, together or not at all), and
    reading results for its templates."""
    profile, templates, results = example()
    entries = []
    for entry in results.entries:
        respondents = 100
        no_stereotype = draw(st.integers(0, respondents))
        if entry.survey_type == 2:
            first = draw(st.integers(0, respondents - no_stereotype))
            votes = dict(zip(entry.votes, (first, respondents - no_stereotype - first)))
        else:
            votes = {group: draw(st.integers(0, respondents)) for group in entry.votes}
        entries.append(replace(entry, votes=votes, no_stereotype=no_stereotype, respondents=respondents))
    keys = sorted({t.template_key for t in templates})
    reading = ReadingResults("reading.csv", {key: (draw(st.integers(0, 10)), 10) for key in keys})
    return replace(results, entries=tuple(entries)), reading


@settings(max_examples=40, deadline=None)
@given(surveys())
def test_every_report_names_the_same_rule_for_a_dropped_template(survey):
    profile, templates, _ = example()
    results, reading = survey
    outcome = apply_survey_rules(templates, SurveyData(results, reading), profile)
    log = build_audit_log(PROJECT_ROOT, outcome.decisions, {})
    for template in outcome.templates:
        fate = log.fates[f"{template.key[0]}|{template.key[1]}"]
        if template.keep:
            assert not fate.drops
            continue
        first = template.survey_failure if not template.survey_keep else RULE_READING
        assert fate.drop_rule == f"survey: {first}"  # why, audit.html
        logged = next(d for d in outcome.decisions if d.subject == fate.subject and d.outcome == "drop")
        assert logged.numbers.get("stereotype_rule", logged.rule) == first  # the decision log
        assert first in fate.drops[0].reason or fate.drops[0].rule == first
    # funnel.md's "templates dropped" per rule and audit.html's funnel count the same templates.
    _, rows = funnel_rows(log, profile)
    audit = Counter()
    for row in rows:
        audit.update({rule.removeprefix("survey: "): count for rule, count in row.drops.items()})
    funnel = {row[0]: int(str(row[2]).split(" of ")[0]) for row in rule_effects(outcome)
              if " of " in str(row[2])}
    assert +Counter(funnel) == audit
