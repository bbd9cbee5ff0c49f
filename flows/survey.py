"""The survey stage as two Prefect flows: ``export_survey`` (before) and ``ingest_survey`` (after).

Tasks are thin wrappers around ``tasks.survey``; none does work worth caching (the whole stage
runs in well under a second), so none is cached. Every input is read and checked before the
first file is written, and every file is written atomically, so a bad input leaves nothing
half-written.

The build does not need these flows: it calls ``tasks.survey.stage.survey_stage``, which reads the
inputs through the same ``tasks.survey.inputs.load_survey_data`` (default overrides included) but
allows results that match no template (recording them).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from core import interrupt
from core.profile import Profile, load_profile
from core.atomic import write_bytes
from core.decisions import Decision
from tasks.survey import SurveyOutcome, SurveyResults
from tasks.survey.export import ExportResult, export_questionnaires, write_survey_decisions
from tasks.survey.inputs import SurveyData, apply_survey_rules, load_survey_data
from tasks.survey.agreement import render_agreement
from tasks.survey.funnel import render_funnel
from tasks.survey.results import NO_STEREO
from tasks.templates.load import TemplateRow
from tasks.templates.validate import load_checked

@dataclass(frozen=True)
class IngestResult:
    templates: int  # template IDs in
    kept: int  # template IDs kept
    kept_rows: int
    stereotypes: int
    stereotypes_kept: int
    unmatched_results: int
    quota_shortfalls: int
    outputs: dict[str, Path]
    decisions: list[Decision] = field(default_factory=list)


@task(name="survey-export", cache_policy=NO_CACHE)
def export_task(templates: list[TemplateRow], profile: Profile, out: Path) -> ExportResult:
    return export_questionnaires(templates, profile, out)


@flow(name="survey-export")
def export_survey(profile_name: str, templates: Path, out: Path, corrections: Path | None = None) -> ExportResult:
    """Before the survey: unique stereotypes, their question type, questionnaires for the vendor."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    return export_task(load_checked(templates, corrections, profile)[0].templates, profile, out)


def released_format(results: SurveyResults) -> bytes:
    """Aggregated results in the released JSON format (respondent-level input aggregated to it)."""
    entries = [{"category": e.category, "stereotype": e.stereotype,
                "survey_stats": {**e.votes, NO_STEREO: e.no_stereotype}} for e in results.entries]
    entries.sort(key=lambda e: (e["category"], e["stereotype"], sorted(e["survey_stats"])))
    return (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def quota_csv(results: SurveyResults) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question_id", "what", "expected", "actual"])
    writer.writerows([q.question_id, q.what, q.expected, q.actual] for q in results.quota)
    return buffer.getvalue().encode("utf-8")


@dataclass(frozen=True)
class IngestInputs:
    profile: Profile
    templates: list[TemplateRow]
    data: SurveyData


def read_ingest_inputs(profile_name: str, templates: Path, results: Path, reading: Path | None = None,
                       overrides: Path | None = None, questions: Path | None = None,
                       corrections: Path | None = None) -> IngestInputs:
    """Read and check every input (plain function: the CLI calls it before Prefect starts).
    The survey inputs go through ``tasks.survey.inputs.load_survey_data``, as in the build."""
    profile = load_profile(profile_name)
    rows = load_checked(templates, corrections, profile)[0].templates
    return IngestInputs(profile, rows, load_survey_data(profile, results, reading, overrides, questions))


@task(name="survey-apply-rules", cache_policy=NO_CACHE)
def apply_rules(inputs: IngestInputs, allow_unmatched: bool) -> SurveyOutcome:
    return apply_survey_rules(inputs.templates, inputs.data, inputs.profile, allow_unmatched)


@task(name="survey-write-reports", cache_policy=NO_CACHE)
def write_reports(outcome: SurveyOutcome, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "funnel": (out / "funnel.md", render_funnel(outcome).encode("utf-8")),
        "agreement": (out / "survey_agreement.md", render_agreement(outcome).encode("utf-8")),
        "results": (out / "survey_results.json", released_format(outcome.results)),
        "quota": (out / "quota_shortfalls.csv", quota_csv(outcome.results)),
    }
    for path, data in files.values():
        write_bytes(path, data)
    outputs = {name: path for name, (path, _) in files.items()}
    outputs.update(write_survey_decisions(outcome.decisions, out))
    return outputs


@flow(name="survey-ingest")
def ingest_survey(profile_name: str, templates: Path, results: Path, out: Path, reading: Path | None = None,
                  overrides: Path | None = None, questions: Path | None = None, corrections: Path | None = None,
                  allow_unmatched: bool = False) -> IngestResult:
    """After the survey: read results (JSON or respondent-level), apply the rules and overrides,
    write the decision log, funnel, agreement report, aggregated results and quota shortfalls."""
    interrupt.take_over()
    inputs = read_ingest_inputs(profile_name, templates, results, reading, overrides, questions, corrections)
    outcome = apply_rules(inputs, allow_unmatched)
    outputs = write_reports(outcome, out)
    return IngestResult(len(outcome.templates), sum(t.keep for t in outcome.templates), len(outcome.kept),
                        len(outcome.stereotypes), sum(e.keep() for e in outcome.stereotypes), len(outcome.unmatched),
                        len(inputs.data.results.quota), outputs, outcome.decisions)
