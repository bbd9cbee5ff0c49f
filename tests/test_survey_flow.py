"""The survey ingest flow end to end on the project's example (one Prefect flow run)."""

from __future__ import annotations

import csv
import json

import pytest

from core.paths import EXAMPLE_TEMPLATES, SURVEY_DIR
from core.profile import load_profile
from tasks.survey.ingest import IngestRequest
from tasks.survey.inputs import SurveyInputs

EXAMPLE = SURVEY_DIR / "ko" / "example"


@pytest.mark.flow
def test_ingest_flow_writes_every_output(prefect_harness, tmp_path):
    from flows.survey import ingest_survey

    ko = load_profile("ko")
    inputs = SurveyInputs(EXAMPLE / "responses.csv", EXAMPLE / "reading_results.csv").resolve(ko)
    result = ingest_survey(IngestRequest(ko, EXAMPLE_TEMPLATES, inputs, tmp_path))
    assert (result.templates, result.kept, result.quota_shortfalls) == (6, 3, 5)
    with (tmp_path / "decisions_survey.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(result.decisions)
    assert {"funnel.md", "survey_agreement.md", "survey_results.json", "quota_shortfalls.csv",
            "decisions_survey.parquet"} <= {p.name for p in tmp_path.iterdir()}
    aggregated = json.loads((tmp_path / "survey_results.json").read_text(encoding="utf-8"))
    age = next(e for e in aggregated if e["stereotype"] == "고집이 셈")
    assert age["survey_stats"] == {"노인": 55, "청년": 30, "no_stereo": 15}
    with (tmp_path / "quota_shortfalls.csv").open(encoding="utf-8") as handle:
        assert sum(1 for _ in csv.DictReader(handle)) == 5
