"""The survey-export stage: the questionnaires to send to the survey company, for the templates stage's
``templates``. Output: ``questionnaire`` (and ``questions.csv`` beside it, which the survey stage
reads respondent-level results with)."""

from __future__ import annotations

from pathlib import Path

from core.stage_contract import Context, Stage, StageOutput
from tasks.templates.stage_templates import TEMPLATE_SETTINGS, checked_templates
from core.decisions import write_decisions_parquet
from tasks.survey.export import export_questionnaires
from tasks.survey.stereotypes import collect_stereotypes

NAME = "survey-export"


def inputs(ctx: Context) -> dict[str, Path | None]:
    # The profile's survey folder: the questionnaire wording (type1.j2, type2.j2, reading.j2, options.toml) and
    # the group lists; changing any of them makes the questionnaires stale.
    return {"templates": ctx.templates_file(), "corrections": ctx.corrections,
            "survey_wording": ctx.profile.file("survey")}


def prepare(ctx: Context) -> None:
    """Before the flow run: the stereotypes of the template file collected (a template without the groups its
    survey question needs stops in one line before Prefect starts), unless the templates stage is about to
    write it."""
    path = ctx.templates_file()
    if ctx.profile.survey.enabled and "templates" not in ctx.pending and path is not None and path.exists():
        collect_stereotypes(checked_templates(ctx, path)[0].templates, ctx.profile)


def run(ctx: Context) -> StageOutput:
    if not ctx.profile.survey.enabled:
        return StageOutput({}, {}, [], f"profile {ctx.profile.name}: no survey; nothing to send out")
    templates = checked_templates(ctx, ctx.templates_file())[0].templates  # type: ignore[arg-type]
    folder = ctx.stage_dir(NAME)
    result = export_questionnaires(templates, ctx.profile, folder)
    write_decisions_parquet(result.decisions, ctx.decisions_file(NAME, "survey").with_suffix(".parquet"))
    counts = {k: v for k, v in vars(result).items() if isinstance(v, int)}
    outputs = {"questionnaire": result.outputs["workbook"], "questions": result.outputs["questions"]}
    return StageOutput(counts, outputs, list(result.decisions),
                       f"questionnaires for {result.questions} questions ({result.type1} type 1, {result.type2} type "
                       f"2) and {result.reading_questions} reading-comprehension questions written to {folder}")


STAGE = Stage(NAME, inputs, run, settings=(*TEMPLATE_SETTINGS, "survey.enabled", "survey.type1_categories",
                                                   "survey.seed", "culture"), after=("templates",),
              prepare=prepare, log="survey")
