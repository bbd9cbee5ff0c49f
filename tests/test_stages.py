"""The stage contract: stage order and names, outputs looked up by role, survivors read from decisions."""

from __future__ import annotations

import importlib
from fractions import Fraction

import pytest

from core.decisions import Decision
from core.errors import UserError
from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.pipeline_file import DONE, StageState, load_pipeline, write_state
from tasks.pipeline.stages import STAGE_OF, STAGES
from tasks.pipeline.plan import STAGE_LIST, check_order, context, each_stage, stages_for
from tasks.release.dataset_card import STAGE_WORK
from tasks.survey.inputs import SurveyInputs
from tasks.survey.survey_stage import survey_stage, survivors
from tasks.templates.load import load_kobbq_templates
from tasks.templates.stage_templates import loaded_templates

EXAMPLE_SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"


def test_each_contract_names_the_module_that_does_its_work():
    """A stage's module is imported only when it runs: it defines ``run``, and ``prepare`` exactly when its contract
    says it prepares (a contract naming a wrong module fails here, not in the middle of a build)."""
    for stage in STAGE_LIST:
        module = importlib.import_module(stage.module)
        assert callable(module.run) and hasattr(module, "prepare") == stage.prepares, stage.name


def test_stage_names_are_the_pipeline_vocabulary():
    assert [s.name for s in STAGE_LIST] == STAGES == [
        "labels", "pretranslate", "postedit", "templates", "survey-export", "survey", "release"]
    # The card and the audit order decisions by the card's descriptions of the stages (tasks.release cannot import
    # the runner's list): a new or moved stage changes both.
    assert list(STAGE_WORK) == STAGES


def test_outputs_are_found_by_role_once_recorded_relative_to_the_build_folder(tmp_path):
    ctx = context(load_pipeline(EXAMPLE_PIPELINE), tmp_path)
    assert ctx.output("labels", "labels") is None  # not run yet: a fingerprint records it as missing
    write_state(ctx.states, StageState("labels", DONE, "f", "", {}, {"labels": "KoBBQ-example.work/x/labels.csv",
                                                                      "bbq": str(EXAMPLE_TEMPLATES)}))
    assert ctx.output("labels", "labels") == tmp_path / "KoBBQ-example.work" / "x" / "labels.csv"
    assert ctx.output("labels", "bbq") == EXAMPLE_TEMPLATES  # an input outside the build folder: as recorded
    assert ctx.output("labels", "agreement") is None
    moved = context(load_pipeline(EXAMPLE_PIPELINE), tmp_path / "copy")  # a copy of the build folder reads its own
    (tmp_path / "copy").mkdir()
    import shutil
    shutil.copytree(tmp_path / "KoBBQ-example.pipeline", tmp_path / "copy" / "KoBBQ-example.pipeline")
    assert moved.output("labels", "labels") == tmp_path / "copy" / "KoBBQ-example.work" / "x" / "labels.csv"


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
    assert STAGE_OF["templates"].inputs(ctx) == {"postedit": released, "corrections": None}
    result = STAGE_OF["templates"].run(ctx)
    assert result.outputs == {"templates": released}
    # Every row of the twelve workbooks, labelled t, m or n.
    rows = loaded_templates(ctx, released).templates
    assert result.counts["rows"] == len(rows) and set(result.counts) == {"rows", "t", "m", "n"}

    pipeline_path.write_text('profile = "es"\nname = "EsBBQ"\n[templates]\ngroups = "groups.csv"\n', encoding="utf-8")
    with pytest.raises(UserError, match="keeps groups and new templates in its workbooks"):
        STAGE_OF["templates"].run(context(load_pipeline(pipeline_path), tmp_path / "out"))


def fingerprints(ctx) -> dict[str, str]:
    return {check.stage.name: check.fingerprint for check in each_stage(ctx, stages_for(ctx.pipeline))}


def test_a_changed_survey_cut_off_makes_the_survey_and_what_follows_stale_and_nothing_before(tmp_path):
    """Each stage's fingerprint covers what it declares it reads: one survey setting reaches the survey stage and,
    through it, the release; the labels, the translation and the templates keep theirs."""
    pipeline = load_pipeline(EXAMPLE_PIPELINE)
    ctx = context(pipeline, tmp_path)
    before = fingerprints(ctx)
    survey = ctx.profile.survey.model_copy(update={"type2_agreement": Fraction(3, 4)})
    changed = context(pipeline, tmp_path, ctx.profile.model_copy(update={"survey": survey}))
    after = fingerprints(changed)
    assert {name for name in before if before[name] != after[name]} == {"survey", "release"}
    card = ctx.profile.card.model_copy(update={"pretty_name": "Another name"})
    renamed = fingerprints(context(pipeline, tmp_path, ctx.profile.model_copy(update={"card": card})))
    assert {name for name in before if before[name] != renamed[name]} == {"release"}


def test_a_stage_that_reads_a_stage_not_run_before_it_is_refused_when_the_run_starts():
    survey, release = STAGE_LIST[-2], STAGE_LIST[-1]
    check_order([survey, release])
    with pytest.raises(RuntimeError, match="stage release reads survey, which does not run before it"):
        check_order([STAGE_LIST[3], release, survey])  # templates, release, survey: the release reads the survey


def test_a_done_stage_whose_output_changed_is_not_current_and_says_which_file(tmp_path):
    from tasks.pipeline.plan import done_state

    ctx = context(load_pipeline(EXAMPLE_PIPELINE), tmp_path)
    labels = ctx.stage_dir("labels") / "labels.csv"
    labels.write_text("subject,label,rationale\n", encoding="utf-8")
    first = next(each_stage(ctx, STAGE_LIST))
    write_state(ctx.states, done_state(ctx, first, {}, {"labels": labels}, "done"))
    assert next(each_stage(ctx, STAGE_LIST)).current
    labels.write_text("subject,label,rationale\nbbq:Age:1,ST,edited\n", encoding="utf-8")
    check = next(each_stage(ctx, STAGE_LIST))
    assert not check.current and check.problem == f"{labels} was changed since the stage wrote it"
    labels.unlink()
    assert next(each_stage(ctx, STAGE_LIST)).problem == f"{labels} is missing since the stage wrote it"


def test_status_names_what_changed_inputs_settings_or_code():
    from core.pipeline_file import STALE, describe

    parts = {"inputs": "i", "settings": "s", "code": "c"}
    state = StageState("survey", DONE, "old", "", {"rows": 3}, parts=parts, finished_at="then")
    assert describe(state, "new", {**parts, "code": "c2"}) == (STALE, "code changed since then (was: rows 3)")
    assert describe(state, "new", {**parts, "inputs": "i2", "settings": "s2"})[1].startswith(
        "inputs and settings changed since then")
    assert describe(StageState("survey", DONE, "old", finished_at="then"), "new", parts)[1].startswith(
        "what it reads changed")  # recorded by an older version, without the parts
