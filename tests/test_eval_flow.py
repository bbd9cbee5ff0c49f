"""The scoring flow end to end on a small release (one Prefect flow run), results table as an artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kobbq.cli import main
from tasks.evaluation.prompts import EXAMPLE_PROMPTS
from tasks.evaluation.report import ScoreRequest
from test_eval_fixtures import write_release


@pytest.mark.flow
def test_score_flow_writes_outputs_and_the_results_artifact(prefect_harness, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    from flows.evaluation import ARTIFACT_KEY, score_predictions

    release = write_release(tmp_path / "rel")
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(release), "--prompt-table", str(EXAMPLE_PROMPTS), "--prompt", "2",
                 "--out", str(prepared)]) == 0
    answers = tmp_path / "answers.jsonl"
    lines = [json.loads(line) for line in (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    answers.write_text("".join(json.dumps({"id": r["id"], "prompt_id": 2, "model": "oracle", "raw": r["answer"],
                                           "status": "ok"}) + "\n" for r in lines), encoding="utf-8")
    files = score_predictions(ScoreRequest(release=release, predictions=[answers], out=tmp_path / "out",
                                           prepared=prepared, bootstrap=50, figures=False))
    assert {path.name for path in files} == {"results.tsv", "results_intervals.tsv", "ooc.tsv", "missing.tsv",
                                             "results.md"}
    results = (tmp_path / "out" / "results.tsv").read_text(encoding="utf-8").splitlines()
    assert results[1] == "oracle\toverall\t0.0\t1.0\t1.0\t0.0\t0.0\t2"
    with get_client(sync_client=True) as client:
        artifact = client.read_latest_artifacts()
    markdown = [a.data for a in artifact if a.key == ARTIFACT_KEY]
    assert markdown and "## oracle, prompt 2" in markdown[0]
