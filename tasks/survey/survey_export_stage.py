"""The survey-export stage: the questionnaires to send to the survey company, for the templates stage's
``templates``. Output: ``questionnaire`` (and ``questions.csv`` beside it, which the survey stage
reads respondent-level results with)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.decisions import Decision, write_decisions_parquet
from core.profile import Profile
from core.stage_contract import Context, Stage, StageOutput
from tasks.survey.groups import profile_group_lists
from tasks.survey.questionnaires import build_questions, build_reading, group_rows, load_wording, write_export
from tasks.survey.stereotypes import Stereotype, collect_stereotypes
from tasks.templates.load import TemplateRow
from tasks.templates.stage_templates import TEMPLATE_SETTINGS, checked_templates

NAME = "survey-export"


@dataclass(frozen=True)
class ExportResult:
    questions: int
    type1: int
    type2: int
    reading_questions: int
    outputs: dict[str, Path]
    decisions: list[Decision] = field(default_factory=list)


def type_decision(stereotype: Stereotype) -> Decision:
    """Why a stereotype is asked as a type-1 or a type-2 question."""
    return Decision(NAME, "stereotype", f"stereotype:{stereotype.category}:{stereotype.text}", "survey-type",
                    f"type {stereotype.survey_type}", stereotype.type_reason,
                    {"question_id": stereotype.question_id, "groups": list(stereotype.groups)}, False, "")


def export_questionnaires(templates: list[TemplateRow], profile: Profile, out: Path) -> ExportResult:
    stereotypes, _ = collect_stereotypes(templates, profile)  # raises on a template error
    lists = profile_group_lists(profile)
    wording = load_wording(profile)
    questions = build_questions(stereotypes, lists, profile, wording)
    reading = build_reading(templates, profile, wording)
    outputs = write_export(out, questions, reading, group_rows(lists, profile))
    decisions = [type_decision(s) for s in stereotypes]
    return ExportResult(len(questions), sum(q.survey_type == 1 for q in questions),
                        sum(q.survey_type == 2 for q in questions), len(reading), outputs, decisions)


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
