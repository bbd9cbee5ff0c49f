"""``kobbq survey ingest``: its request (``IngestRequest``), the survey stage run once on it
(``check_ingest``, before Prefect starts: a bad file fails at once), and what it writes from the stage's
outcome: the stage's reports and decisions (CSV and Parquet), the results in the released aggregated
format (respondent-level input counted into it) and the quota shortfalls. Every file is written atomically."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from core.atomic import write_bytes, write_text
from core.decisions import Decision
from core.profile import Profile
from core.tables import write_csv_rows
from tasks.survey.export import write_survey_decisions
from tasks.survey.results import NO_STEREO, SurveyResults
from tasks.survey.inputs import SurveyInputs
from tasks.survey.survey_stage import FUNNEL, GROUP_CHECK, SurveyStage, survey_stage
from tasks.survey.votes import VOTES
from tasks.templates.validate import load_checked

QUOTA_COLUMNS = ["question_id", "what", "expected", "actual"]


@dataclass(frozen=True)
class IngestRequest:
    """One ingest: the profile (loaded once), the candidate templates, the survey inputs (resolved: the
    overrides file that will be used is named) and the output folder."""

    profile: Profile
    templates: Path
    inputs: SurveyInputs
    out: Path
    corrections: Path | None = None


def check_ingest(request: IngestRequest) -> SurveyStage:
    """Read and check every input and run the survey stage; nothing is written."""
    rows = load_checked(request.templates, request.corrections, request.profile)[0].templates
    return survey_stage(rows, request.inputs, request.profile)


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


def released_format(results: SurveyResults) -> bytes:
    """Aggregated results in the released JSON format (respondent-level input aggregated to it)."""
    entries = [{"category": e.category, "stereotype": e.stereotype,
                "survey_stats": {**e.votes, NO_STEREO: e.no_stereotype}} for e in results.entries]
    entries.sort(key=lambda e: (e["category"], e["stereotype"], sorted(e["survey_stats"])))
    return (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_ingest_outputs(stage: SurveyStage, out: Path) -> dict[str, Path]:
    """Every file of ``kobbq survey ingest``, by the name ``IngestResult.outputs`` gives it."""
    out.mkdir(parents=True, exist_ok=True)
    results = stage.outcome.results
    quota = [[q.question_id, q.what, str(q.expected), str(q.actual)] for q in results.quota]
    outputs = {"funnel": write_text(out / FUNNEL, stage.reports[FUNNEL]),
               "group_check": write_text(out / GROUP_CHECK, stage.reports[GROUP_CHECK]),
               "votes": write_text(out / VOTES, stage.reports[VOTES]),  # what --help promises, as the release has it
               "results": write_bytes(out / "survey_results.json", released_format(results)),
               "quota": write_csv_rows(out / "quota_shortfalls.csv", QUOTA_COLUMNS, quota)}
    outputs.update(write_survey_decisions(stage.decisions, out))
    return outputs


def ingest_result(stage: SurveyStage, outputs: dict[str, Path]) -> IngestResult:
    """The counts ``kobbq survey ingest`` prints."""
    outcome = stage.outcome
    return IngestResult(len(outcome.templates), sum(t.keep for t in outcome.templates), len(outcome.kept),
                        len(outcome.stereotypes), sum(e.keep() for e in outcome.stereotypes), len(outcome.unmatched),
                        len(outcome.results.quota), outputs, outcome.decisions)
