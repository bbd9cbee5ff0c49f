"""``kobbq eval run --limit N``: a slice of N samples per prompt, spread over the prepared file, scored as a
partial run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_openai import FAKE_KEY, FakeOpenAIServer, write_prepared
from kobbq.cli import main
from tasks.evaluation.runs import Request, load_requests, sample_slice


def requests_of(prompt_ids: tuple[int, ...], samples: int) -> list[Request]:
    return [Request(f"s{n:02d}-{order}", f"s{n:02d}", prompt, f"p{prompt} s{n} o{order}")
            for prompt in prompt_ids for n in range(samples) for order in range(3)]


def test_a_slice_spreads_over_the_file_and_keeps_every_order() -> None:
    requests = requests_of((1, 2), 10)
    kept = sample_slice(requests, 3)
    assert [r.id for r in kept if r.prompt_id == 1] == ["s00-0", "s00-1", "s00-2", "s03-0", "s03-1", "s03-2",
                                                        "s06-0", "s06-1", "s06-2"]
    assert [r.id for r in kept if r.prompt_id == 2] == [r.id for r in kept if r.prompt_id == 1]
    assert kept == [r for r in requests if r in kept]  # file order


def test_no_limit_or_a_limit_past_the_end_keeps_everything() -> None:
    requests = requests_of((1,), 4)
    assert sample_slice(requests, None) == requests
    assert sample_slice(requests, 4) == requests
    assert sample_slice(requests, 50) == requests


@pytest.fixture()
def server():
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def test_cli_limit_sends_the_slice_and_scores_it_as_a_partial_run(example_release: Path, server: FakeOpenAIServer,
                                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(example_release), "--prompt", "1,2", "--out", str(prepared)]) == 0
    assert main(["eval", "run", "--prepared", str(prepared), "--endpoint", server.url, "--model", "fake-model",
                 "--prompt", "1", "--limit", "6", "--out", str(tmp_path / "runs"), "--score"]) == 0
    out = capsys.readouterr().out
    assert "18 requests" in out and "18 sent now" in out
    rows = [json.loads(line) for line in (tmp_path / "runs" / "fake-model" / "answers.jsonl").open(encoding="utf-8")]
    every = load_requests(prepared, [1])
    assert len(rows) == len(server.state.bodies) == 18
    top = {r.sample_id.split("-")[0] for r in every[:18]}  # the file's first 6 samples: one category
    assert len(top) == 1 and len({row["sample_id"].split("-")[0] for row in rows}) > 2
    assert "predictions missing" in (tmp_path / "runs" / "fake-model" / "scores" / "results.md").read_text(
        encoding="utf-8")


def test_cli_limit_is_refused_on_a_work_pool(example_release: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    assert main(["eval", "run", "--prepared", str(prepared), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                 "--limit", "2", "--deployment", "kobbq-model-run/x", "--out", str(tmp_path / "runs")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--limit is for a run from this machine" in err
