"""What the survey stage writes besides its reports (``tasks.survey.survey_stage``): the results in the released
aggregated format (respondent-level input counted into it) and the quota shortfalls. Every file is written
atomically."""

from __future__ import annotations

import json
from pathlib import Path

from core.atomic import write_bytes
from core.tables import write_csv_rows
from tasks.survey.results import NO_STEREO, SurveyResults

QUOTA_COLUMNS = ["question_id", "what", "expected", "actual"]
RESULTS = "survey_results.json"
QUOTA = "quota_shortfalls.csv"


def released_format(results: SurveyResults) -> bytes:
    """Aggregated results in the released JSON format (respondent-level input aggregated to it)."""
    entries = [{"category": e.category, "stereotype": e.stereotype,
                "survey_stats": {**e.votes, NO_STEREO: e.no_stereotype}} for e in results.entries]
    entries.sort(key=lambda e: (e["category"], e["stereotype"], sorted(e["survey_stats"])))
    return (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_results(results: SurveyResults, folder: Path) -> dict[str, Path]:
    """``survey_results.json`` and ``quota_shortfalls.csv``, by the role the stage records them under."""
    quota = [[q.question_id, q.what, str(q.expected), str(q.actual)] for q in results.quota]
    return {"results": write_bytes(folder / RESULTS, released_format(results)),
            "quota": write_csv_rows(folder / QUOTA, QUOTA_COLUMNS, quota)}
