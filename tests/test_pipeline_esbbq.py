"""EsBBQ through the whole pipeline: labels from the workbooks' BBQ links, the workbooks as the post-edit,
no survey, and the release: the released files again, every BBQ template on record."""

from __future__ import annotations

import pytest

from core.decisions import read_decisions
from core.paths import PROJECT_ROOT
from core.pipeline_file import DONE, read_state
from tasks.pipeline.stages import STAGES
from runs import run
from tasks.pipeline.plan import pipeline_plan
from tasks.templates.bbq import load_bbq_templates

ESBBQ_PIPELINE = PROJECT_ROOT / "templates_raw" / "real" / "esbbq_release.toml"


@pytest.mark.flow
@pytest.mark.realdata
def test_esbbq_pipeline_reproduces_the_released_files(tmp_path, prefect_harness, shared_data, bbq_templates_dir):
    plan = pipeline_plan(ESBBQ_PIPELINE, tmp_path)
    result = run(plan)
    assert result.finished and result.samples == 27_320 and result.test_samples == 0
    released = shared_data / "esbbq" / "released_dev" / "es"
    for path in sorted(released.glob("*.full.csv")):
        assert (result.release_dir / "data_es" / path.name).read_bytes() == path.read_bytes(), path.name
    assert all(read_state(plan.ctx.states, stage).status == DONE for stage in STAGES)
    decisions = read_decisions(result.release_dir / "decisions.csv")
    every_bbq_template = {t.subject for t in load_bbq_templates(bbq_templates_dir)[0]}
    # Every BBQ template: its label (t/m read as ST/TM), or why it has none.
    assert {d.subject for d in decisions if d.stage == "labels" and d.subject_type == "bbq_template"} == \
        every_bbq_template
    new = {d.subject for d in decisions if d.rule == "reference-no-bbq-link"}
    assert "SpanishRegion|1" in new and len([s for s in new if s.startswith("SpanishRegion|")]) == 35
