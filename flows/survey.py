"""The survey stage as two Prefect flows: ``export_survey`` (before) and ``ingest_survey`` (after).

Each is a thin wrapper around the function the pipeline's stage calls: ``export_questionnaires``
(``tasks.survey.export_stage``) and ``survey_stage`` (``tasks.survey.stage``), so a standalone run
reads the same inputs the same way (default overrides included) and takes the same decisions. Nothing
is cached: the whole stage runs in well under a second. Every input is read and checked before the
first file is written, and every file is written atomically, so a bad input leaves nothing
half-written.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from core import interrupt
from core.profile import Profile, load_profile
from tasks.survey.export import ExportResult, export_questionnaires
from tasks.survey.ingest import IngestResult, ingest_result, write_ingest_outputs
from tasks.survey.inputs import SurveyInputs
from tasks.survey.stage import SurveyStage, survey_stage
from tasks.templates.load import TemplateRow
from tasks.templates.validate import load_checked


@task(name="survey-export", cache_policy=NO_CACHE)
def export_task(templates: list[TemplateRow], profile: Profile, out: Path) -> ExportResult:
    return export_questionnaires(templates, profile, out)


@flow(name="survey-export")
def export_survey(profile_name: str, templates: Path, out: Path, corrections: Path | None = None) -> ExportResult:
    """Before the survey: unique stereotypes, their question type, questionnaires for the vendor."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    return export_task(load_checked(templates, corrections, profile)[0].templates, profile, out)


def check_ingest(profile_name: str, templates: Path, inputs: SurveyInputs,
                 corrections: Path | None = None) -> SurveyStage:
    """Read and check every input and run the survey stage; nothing is written (a plain function: the
    command calls it before Prefect's API starts, so a bad file fails at once)."""
    profile = load_profile(profile_name)
    rows = load_checked(templates, corrections, profile)[0].templates
    return survey_stage(rows, inputs.resolve(profile), profile)


@task(name="survey-stage", cache_policy=NO_CACHE)
def survey_stage_task(profile_name: str, templates: Path, inputs: SurveyInputs,
                      corrections: Path | None) -> SurveyStage:
    return check_ingest(profile_name, templates, inputs, corrections)


@task(name="survey-write-outputs", cache_policy=NO_CACHE)
def write_outputs(stage: SurveyStage, out: Path) -> dict[str, Path]:
    return write_ingest_outputs(stage, out)


@flow(name="survey-ingest")
def ingest_survey(profile_name: str, templates: Path, results: Path, out: Path, reading: Path | None = None,
                  overrides: Path | None = None, questions: Path | None = None, corrections: Path | None = None,
                  allow_unmatched: bool = False) -> IngestResult:
    """After the survey: read results (JSON or respondent-level), apply the rules and overrides,
    write the decision log, funnel, group check, aggregated results and quota shortfalls."""
    interrupt.take_over()
    inputs = SurveyInputs(results, reading, overrides, questions, allow_unmatched)
    stage = survey_stage_task(profile_name, templates, inputs, corrections)
    return ingest_result(stage, write_outputs(stage, out))
