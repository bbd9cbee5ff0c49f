"""The (model x prompt) flow against the fake server: a per-endpoint limit, answer files, the runs table."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_openai import FAKE_KEY, FakeOpenAIServer, fake_answer, token_count, write_prepared
from test_eval_run import read_jsonl


def test_limit_name() -> None:
    from tasks.evaluation.pool import limit_name

    assert limit_name("http://10.0.0.5:8000/v1") == "kobbq-endpoint-10.0.0.5-8000"
    assert limit_name("https://api.openai.com/v1") == "kobbq-endpoint-api.openai.com"


@pytest.mark.flow
def test_model_runs_flow_limits_the_endpoint_and_publishes_the_table(
        prefect_harness, example_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.artifacts import Artifact
    from prefect.client.orchestration import get_client

    from flows.model_runs import model_runs_flow
    from tasks.evaluation.pool import RunUnit, limit_name

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    server = FakeOpenAIServer().start()
    server.state.delay_seconds, server.state.slow_times = 0.08, 10**6  # runs ~6 s: unlimited, they overlap
    try:
        template = RunUnit(str(prepared.resolve()), server.url, "model-a", 0,
                           str((tmp_path / "out" / "answer_cache.sqlite").resolve()), concurrency=1)
        table = model_runs_flow(template, ["model-a", "model-b"], tmp_path / "out", endpoint_limit=1)
        again = model_runs_flow(template, ["model-a", "model-b"], tmp_path / "out")
    finally:
        server.stop()
    assert server.state.max_in_flight == 1  # one slot for the endpoint, one request per run
    assert sum(server.state.answered.values()) == 2 * 72 and server.state.repeated() == {}
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(limit_name(server.url)).limit == 1
    requests = read_jsonl(prepared / "requests.jsonl")
    expected = [{"model": m, "prompt": p, "requests": 72, "ok": 72, "empty": 0, "malformed": 0, "failed": 0,
                 "tokens_in": sum(token_count(r["prompt"]) for r in requests if r["prompt_id"] == p),
                 "tokens_out": sum(token_count(fake_answer(r["prompt"])) for r in requests if r["prompt_id"] == p)}
                for m in ("model-a", "model-b") for p in (1,)]
    assert table == expected and again == expected
    for model in ("model-a", "model-b"):
        rows = read_jsonl(tmp_path / "out" / model / "answers.jsonl")
        assert [(r["id"], r["prompt_id"], r["raw"]) for r in rows] == [
            (q["id"], q["prompt_id"], fake_answer(q["prompt"])) for q in requests]
    artifact = Artifact.get("kobbq-model-runs")
    assert artifact is not None and "model-b" in str(artifact.data)


def test_shards_split_a_prompt_so_that_no_prompt_text_is_asked_by_two_units(tmp_path: Path) -> None:
    import json

    from tasks.evaluation.pool import RunUnit

    # 40 requests of prompt 1 over 20 prompt texts (each text twice, as two choice orders that read the same).
    rows = [{"id": f"s{i}-{k}", "sample_id": f"s{i}", "prompt_id": 1, "prompt": f"질문 {i % 20}",
             "choices": {"A": "a", "B": "b", "C": "c"}, "answer": "A"} for i in range(20) for k in range(2)]
    rows.append({**rows[0], "id": "other-0", "prompt_id": 2})
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                             encoding="utf-8")
    units = [RunUnit(str(tmp_path), "http://127.0.0.1:1/v1", "m", 1, str(tmp_path / "cache.sqlite"), shard=n,
                     shards=3) for n in range(3)]
    parts = [u.requests() for u in units]
    assert sorted(r.id for part in parts for r in part) == sorted(r["id"] for r in rows[:-1])
    texts = [{r.prompt for r in part} for part in parts]
    assert all(part for part in parts) and not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    assert [u.unanswered() for u in units] == [len(t) for t in texts]
    assert len({u.key for u in units}) == 3 and units[0].key == RunUnit(**{**units[0].__dict__}).key
