"""Before the survey: the unique stereotypes of the candidate templates, their question type, and the
questionnaires for the survey company (``questionnaire.xlsx``, ``questions.csv``,
``reading_questions.csv``, ``groups.csv``) and the decisions of the question types."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.decisions import Decision
from core.profile import Profile
from tasks.survey.groups import profile_group_lists
from tasks.survey.questionnaires import build_questions, build_reading, group_rows, load_wording, write_export
from tasks.survey.stereotypes import Stereotype, collect_stereotypes
from tasks.templates.load import TemplateRow

STAGE = "survey-export"


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
    return Decision(STAGE, "stereotype", f"stereotype:{stereotype.category}:{stereotype.text}", "survey-type",
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
