"""The survey ingest flow end to end on the project's example (one Prefect flow run)."""

from __future__ import annotations

import csv
import json

import pytest

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.pipeline_file import PipelineConfig, SurveySection, TemplatesSection
from core.profile import load_profile
from runs import run

EXAMPLE = PROJECT_ROOT / "survey" / "ko" / "example"


@pytest.mark.flow
def test_ingest_writes_every_output_in_one_flow_run(prefect_harness, tmp_path):
    from tasks.pipeline.plan import one_off_plan
    from tasks.pipeline.stages import STAGE_OF

    STAGE = STAGE_OF["survey"]

    ko = load_profile("ko")
    config = PipelineConfig(profile="ko", templates=TemplatesSection(file=str(EXAMPLE_TEMPLATES)),
                            survey=SurveySection(results=str(EXAMPLE / "responses.csv"),
                                                 reading=str(EXAMPLE / "reading_results.csv")))
    output = run(one_off_plan(STAGE, config, ko, tmp_path)).outputs["survey"]
    assert (output.counts["template_ids"], output.counts["kept"], output.counts["quota_shortfalls"]) == (6, 3, 5)
    with (tmp_path / "decisions_survey.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(output.decisions)
    assert {"funnel.md", "survey_agreement.md", "survey_results.json", "quota_shortfalls.csv",
            "decisions_survey.parquet"} <= {p.name for p in tmp_path.iterdir()}
    aggregated = json.loads((tmp_path / "survey_results.json").read_text(encoding="utf-8"))
    age = next(e for e in aggregated if e["stereotype"] == "고집이 셈")
    assert age["survey_stats"] == {"노인": 55, "청년": 30, "no_stereo": 15}
    with (tmp_path / "quota_shortfalls.csv").open(encoding="utf-8") as handle:
        assert sum(1 for _ in csv.DictReader(handle)) == 5
