"""The survey stage as two Prefect flows: ``export_survey`` (before) and ``ingest_survey`` (after).

Each is a thin wrapper around the function the pipeline's stage calls: ``export_questionnaires``
(``tasks.survey.survey_export_stage``) and ``survey_stage`` (``tasks.survey.survey_stage``, through
``tasks.survey.ingest.check_ingest``), so a standalone run reads the same inputs the same way (default
overrides included) and takes the same decisions. Nothing is cached: the whole stage runs in well under a
second. Every input is read and checked before the first file is written, and every file is written
atomically, so a bad input leaves nothing half-written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Generic, TypeVar

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque

from core import interrupt
from core.profile import Profile, load_profile
from tasks.survey.export import ExportResult, export_questionnaires
from tasks.survey.ingest import IngestRequest, IngestResult, check_ingest, ingest_result, write_ingest_outputs
from tasks.survey.survey_stage import SurveyStage
from tasks.templates.load import TemplateRow
from tasks.templates.validate import load_checked

T = TypeVar("T")


class Computed(Generic[T]):
    """A value the command computed before Prefect started, handed to a flow as it is. Prefect stores a flow
    run's parameters when it can serialise them; it cannot serialise this holder (it has no fields to read),
    so the run records ``<Computed>`` instead of encoding and storing every template and decision."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


@task(name="survey-export", cache_policy=NO_CACHE)
def export_task(templates: list[TemplateRow], profile: Profile, out: Path) -> ExportResult:
    return export_questionnaires(templates, profile, out)


@flow(name="survey-export")
def export_survey(profile_name: str, templates: Path, out: Path, corrections: Path | None = None) -> ExportResult:
    """Before the survey: unique stereotypes, their question type, questionnaires for the vendor."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    return export_task(load_checked(templates, corrections, profile)[0].templates, profile, out)


@task(name="survey-stage", cache_policy=NO_CACHE)
def survey_stage_task(request: IngestRequest) -> SurveyStage:
    return check_ingest(request)


@task(name="survey-write-outputs", cache_policy=NO_CACHE)
def write_outputs(stage: SurveyStage, out: Path) -> dict[str, Path]:
    return write_ingest_outputs(stage, out)


@flow(name="survey-ingest")
def ingest_survey(request: IngestRequest, checked: Computed[SurveyStage] | None = None) -> IngestResult:
    """After the survey: read results (JSON or respondent-level), apply the rules and overrides, write the
    decision log, funnel, group check, aggregated results and quota shortfalls. ``checked``: the stage's
    outcome when the command has already run it (``check_ingest``) before Prefect started; the rules run once."""
    interrupt.take_over()
    stage = checked.value if checked is not None else survey_stage_task(request)
    return ingest_result(stage, write_outputs(opaque(stage), request.out))
