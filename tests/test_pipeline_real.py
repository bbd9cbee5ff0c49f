"""The real data through the whole pipeline: the same release as the direct build, every decision on record."""

from __future__ import annotations

import csv
import json

import pytest

from core.paths import DEFAULT_CORRECTIONS, PROJECT_ROOT
from tasks.templates.bbq import load_bbq_templates
from core.text import normalise_text
from core.profile import load_profile
from runs import run
from tasks.pipeline.plan import pipeline_plan, templates_plan
from core.pipeline_file import DONE, read_state
from tasks.pipeline.stages import STAGES

REAL_PIPELINE = PROJECT_ROOT / "templates_raw" / "real" / "kobbq_release.toml"


@pytest.mark.flow
@pytest.mark.realdata
def test_real_pipeline_reproduces_the_direct_build(tmp_path, prefect_harness, shared_data, bbq_templates_dir,
                                                   survey_result_json):
    plan = pipeline_plan(REAL_PIPELINE, tmp_path / "pipeline")
    result = run(plan)
    assert result.finished and result.samples == 76_568 and result.test_samples == 2_280
    direct = run(templates_plan(shared_data / "kobbq" / "KoBBQ_templates.tsv", tmp_path / "direct", load_profile("ko"),
                                corrections=DEFAULT_CORRECTIONS))
    for name in ("KoBBQ_all_samples.tsv", "KoBBQ_test_samples.tsv", "KoBBQ_all_samples.parquet", "table1.md"):
        assert (result.release_dir / name).read_bytes() == (direct.release_dir / name).read_bytes(), name
    # The official test split: exactly its IDs, in the order of the published KoBBQ_test_samples.tsv.
    with (result.release_dir / "KoBBQ_test_samples.tsv").open(encoding="utf-8", newline="") as handle:
        test_ids = [row["sample_id"] for row in csv.DictReader(handle, delimiter="\t")]
    assert test_ids == (shared_data / "kobbq" / "KoBBQ_test_sample_ids.txt").read_text(encoding="utf-8").splitlines()
    manifest = json.loads((result.release_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["test_split"]["method"] == "listed" and manifest["inputs"]["test_split"]["file"] == \
        "KoBBQ_test_sample_ids.txt"

    assert [read_state(plan.ctx.states, s).status for s in STAGES] == [DONE] * len(STAGES)

    with (result.release_dir / "decisions.csv").open(encoding="utf-8", newline="") as handle:
        decisions = list(csv.DictReader(handle))
    bbq, _ = load_bbq_templates(bbq_templates_dir)
    labelled = {d["subject"] for d in decisions if d["stage"] == "labels" and d["subject"].startswith("bbq:")}
    assert labelled == {t.subject for t in bbq}  # every BBQ template: its label, or why it has none
    # Survey texts are compared normalised (one carries a stray U+0008, like ten template rows).
    surveyed = {(e["category"], normalise_text(e["stereotype"])[0])
                for e in json.loads(survey_result_json.read_text(encoding="utf-8"))}
    survey_subjects = {d["subject"] for d in decisions if d["stage"] == "survey" and d["subject_type"] == "stereotype"}
    assert len(surveyed) >= 260
    for category, stereotype in surveyed:
        assert any(s.startswith(f"stereotype:{category}:{stereotype}") for s in survey_subjects), stereotype
    overrides = [d for d in decisions if d["override"] == "true" and d["stage"] == "survey"]
    assert len({d["subject"] for d in overrides if d["subject_type"] == "template"}) == 19
