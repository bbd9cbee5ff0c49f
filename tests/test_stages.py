"""The stage contract: stage order and names, outputs looked up by role, survivors read from decisions."""

from __future__ import annotations

import pytest

from core.decisions import Decision
from core.errors import UserError
from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.pipeline_file import DONE, STAGES, StageState, load_pipeline, write_state
from tasks.build.pipeline import PEOPLE_STAGES, RELEASE, context, each_stage
from tasks.survey.inputs import SurveyInputs
from tasks.survey.survey_stage import survey_stage, survivors
from tasks.templates.load import load_kobbq_templates
from tasks.templates.templates_stage import STAGE as TEMPLATES_STAGE
from tasks.templates.validate import load_corrected

EXAMPLE_SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"


def test_stage_names_are_the_pipeline_vocabulary():
    assert [s.name for s in PEOPLE_STAGES] + [RELEASE] == STAGES == [
        "labels", "pretranslate", "postedit", "templates", "survey-export", "survey", "release"]


def test_outputs_are_found_by_role_once_recorded(tmp_path):
    ctx = context(load_pipeline(EXAMPLE_PIPELINE), tmp_path)
    assert ctx.output("labels", "labels") is None  # not run yet: a fingerprint records it as missing
    labels = tmp_path / "somewhere" / "labels.csv"
    write_state(ctx.states, StageState("labels", DONE, "f", "", {}, {"labels": str(labels)}))
    assert ctx.output("labels", "labels") == labels
    assert ctx.output("labels", "agreement") is None


def _decision(subject: str, rule: str, outcome: str, override: bool = False) -> Decision:
    return Decision("survey", "template", subject, rule, outcome, "", {}, override, "")


def test_survivors_follow_the_logged_outcomes():
    templates = load_kobbq_templates(EXAMPLE_TEMPLATES).templates
    keys = sorted({t.template_key for t in templates})
    (c0, i0), (c1, i1), (c2, i2) = keys[:3]
    decisions = [
        _decision(f"{c0}|{i0}", "reading-comprehension", "drop"),
        _decision(f"{c1}|{i1}", "stereotype-survey", "keep", override=True),  # an override's outcome counts
        _decision(f"{c2}|{i2}", "type1-template-groups", "differs"),  # reported, never drops
    ]
    kept = survivors(templates, decisions)
    assert {t.template_key for t in kept} == set(keys) - {(c0, i0)}
    assert [t for t in templates if t in kept] == kept  # input order


def test_survivors_equal_what_the_rules_kept_on_the_example(ko_profile):
    templates = load_kobbq_templates(EXAMPLE_TEMPLATES).templates
    inputs = SurveyInputs(EXAMPLE_SURVEY / "responses.csv", EXAMPLE_SURVEY / "reading_results.csv", None,
                          EXAMPLE_SURVEY / "questions.csv").resolve(ko_profile)
    stage = survey_stage(templates, inputs, ko_profile)
    dropped = {t.template_key for t in templates} - {t.template_key for t in stage.kept}
    assert ("Age", 2) in dropped and ("Race_ethnicity_nationality", 1) in dropped  # both rules drop something
    assert survivors(templates, stage.decisions) == stage.kept


@pytest.mark.realdata
def test_a_workbook_profile_passes_its_post_edited_workbooks_on(tmp_path, shared_data):
    """EsBBQ's templates stage outside real-data mode: the post-edit's workbook folder (here the released
    one, as `kobbq postedit import --profile es` writes it) is checked and passed on; no groups file."""
    released = shared_data / "esbbq" / "templates"
    if not (released / "vocabulary.xlsx").exists():
        pytest.skip("EsBBQ templates not found")
    pipeline_path = tmp_path / "esbbq.toml"
    pipeline_path.write_text('profile = "es"\nname = "EsBBQ"\n', encoding="utf-8")
    ctx = context(load_pipeline(pipeline_path), tmp_path / "out")
    write_state(ctx.states, StageState("postedit", DONE, "f", "", {}, {"templates": str(released)}))
    assert TEMPLATES_STAGE.inputs(ctx) == {"postedit": released, "corrections": None}
    result = TEMPLATES_STAGE.run(ctx)
    assert result.outputs == {"templates": released}
    # Every row of the twelve workbooks, labelled t, m or n.
    rows = load_corrected(released, ctx.corrections, ctx.profile)
    assert result.counts["rows"] == len(rows) and set(result.counts) == {"rows", "t", "m", "n"}

    pipeline_path.write_text('profile = "es"\nname = "EsBBQ"\n[templates]\ngroups = "groups.csv"\n', encoding="utf-8")
    with pytest.raises(UserError, match="keeps groups and new templates in its workbooks"):
        TEMPLATES_STAGE.run(context(load_pipeline(pipeline_path), tmp_path / "out"))


def test_each_walk_starts_without_an_earlier_walks_upstream(tmp_path):
    """The command's up-to-date check walks the stages before the flow walks them again with the same context:
    decisions the first walk collected must not reach the fingerprints of the second (they would make a skipped
    stage run again and `kobbq status` call it stale)."""
    pipeline = load_pipeline(EXAMPLE_PIPELINE)
    fresh = next(each_stage(context(pipeline, tmp_path))).fingerprint
    ctx = context(pipeline, tmp_path)
    ctx.upstream["labels"] = tmp_path / "decisions.csv"  # as a walk that found the labels stage done leaves it
    assert next(each_stage(ctx)).fingerprint == fresh
