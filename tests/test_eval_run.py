"""``kobbq eval run`` against the fake OpenAI-compatible server: answers, cache, faults, files.

The prepared folder is a stand-in built from the embedded example's release (the run side
depends only on the ``requests.jsonl`` contract); the server is the real ``openai`` client's
counterpart on 127.0.0.1.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import time
from pathlib import Path

import pytest

from fake_openai import EMPTY, FAKE_KEY, MALFORMED, FakeOpenAIServer, fake_answer, token_count, write_prepared
from kobbq.cli import main
from core.errors import UserError
from tasks.evaluation.answer_cache import AnswerCache, GenerationSettings
from tasks.evaluation.client import OpenAIModel, RunStopped
from tasks.evaluation.runs import load_requests, model_slug, run_requests


@pytest.fixture()
def prepared(example_release: Path, tmp_path: Path) -> Path:
    return write_prepared(example_release, tmp_path / "prepared", prompts=(1, 2))


@pytest.fixture()
def server():
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def live_model(server: FakeOpenAIServer, model: str = "fake-model", chat: bool = True, **kwargs) -> OpenAIModel:
    return OpenAIModel(GenerationSettings(server.url, model, chat=chat), FAKE_KEY, **kwargs)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_full_run_writes_every_answer_in_request_order(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = load_requests(prepared)
    assert len(requests) == 24 * 3 * 2  # 24 test samples x 3 orders x 2 prompts
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        summary = run_requests(requests, live_model(server), cache, tmp_path / "out", concurrency=4, progress=False)
    assert (summary.sent, summary.from_cache, summary.failed) == (144, 0, 0)
    rows = read_jsonl(tmp_path / "out" / "fake-model" / "answers.jsonl")
    assert [(r["id"], r["prompt_id"]) for r in rows] == [(q.id, q.prompt_id) for q in requests]
    assert all(r["raw"] == fake_answer(q.prompt) and r["status"] == "ok" for r, q in zip(rows, requests))
    assert summary.prompt_tokens == sum(token_count(q.prompt) for q in requests)
    with (tmp_path / "out" / "fake-model" / "raw_p2.tsv").open(encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle, delimiter="\t"))
    assert table[0] == ["guid", "raw"]
    assert table[1:] == [[q.id, fake_answer(q.prompt)] for q in requests if q.prompt_id == 2]
    assert any("\n" in raw for _, raw in table[1:])  # the 답: (A)\n\n**이유:** style survives the TSV


def test_greedy_thirty_tokens_by_chat_or_completions(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = load_requests(prepared, [1])[:2]
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        run_requests(requests, live_model(server, chat=False), cache, tmp_path / "out", progress=False)
    bodies = server.state.bodies
    assert sorted(b["prompt"] for b in bodies) == sorted(r.prompt for r in requests)
    assert all(b["max_tokens"] == 30 and b["temperature"] == 0 and "messages" not in b for b in bodies)


def test_rerun_sends_only_what_is_new(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.sqlite"
    with AnswerCache(cache_path) as cache:
        run_requests(load_requests(prepared, [1]), live_model(server), cache, tmp_path / "out", progress=False)
        again = run_requests(load_requests(prepared), live_model(server), cache, tmp_path / "out", progress=False)
        other = run_requests(load_requests(prepared, [1]), live_model(server, "other-model"), cache,
                             tmp_path / "out", progress=False)
    assert (again.sent, again.from_cache) == (72, 72)  # prompt 2 is new, prompt 1 comes from the cache
    assert again.prompt_tokens == sum(token_count(q.prompt) for q in load_requests(prepared, [2]))
    assert (other.sent, other.from_cache) == (72, 0)  # another model is another key
    assert server.state.repeated() == {}
    assert sum(server.state.answered.values()) == 72 + 72 + 72


def test_faults_are_retried_and_recorded(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = load_requests(prepared, [1])[:6]
    server.state.scripted[requests[0].prompt] = EMPTY
    server.state.scripted[requests[1].prompt] = MALFORMED
    server.state.fail(429, times=2, retry_after="1")
    started = time.monotonic()
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        summary = run_requests(requests, live_model(server), cache, tmp_path / "out", concurrency=1, progress=False)
    assert time.monotonic() - started >= 2.0  # Retry-After: 1 honoured twice
    assert summary.statuses == {"empty": 1, "malformed": 1, "ok": 4}
    rows = read_jsonl(tmp_path / "out" / "fake-model" / "answers.jsonl")
    assert [(r["status"], r["raw"]) for r in rows[:2]] == [("empty", ""), ("malformed", "")]
    assert server.state.repeated() == {}


def test_server_errors_drops_and_timeouts_are_retried(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = load_requests(prepared, [1])[:4]
    server.state.fail(500, times=1)
    server.state.drop_times = 1
    server.state.delay_seconds, server.state.slow_times = 2.0, 1
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        summary = run_requests(requests, live_model(server, timeout_seconds=0.5), cache, tmp_path / "out",
                               concurrency=1, progress=False)
    assert summary.statuses == {"ok": 4} and summary.sent == 4
    assert sum(server.state.received.values()) == 4 + 3  # one 500, one dropped, one timed out


def test_retries_exhausted_fail_without_caching(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = load_requests(prepared, [1])[:3]
    server.state.fail(503, times=3)  # the first request: first try + 2 retries
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        first = run_requests(requests, live_model(server, max_retries=2), cache, tmp_path / "out", concurrency=1,
                             progress=False)
        assert (first.failed, first.sent) == (1, 2) and "InternalServerError" in first.errors[0]
        second = run_requests(requests, live_model(server, max_retries=2), cache, tmp_path / "out", progress=False)
    assert (second.failed, second.sent, second.from_cache) == (0, 1, 2)
    assert server.state.repeated() == {}


def test_refused_key_stops_at_once_without_showing_it(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    model = OpenAIModel(GenerationSettings(server.url, "fake-model"), "sk-wrong-secret-123")
    with AnswerCache(tmp_path / "cache.sqlite") as cache, pytest.raises(RunStopped) as stopped:
        run_requests(load_requests(prepared), model, cache, tmp_path / "out", concurrency=2, progress=False)
    assert "refused the key (HTTP 401" in stopped.value.message
    assert "sk-wrong-secret-123" not in stopped.value.message
    assert sum(server.state.received.values()) <= 3  # stopped after the requests already in flight
    assert not (tmp_path / "out").exists()


def test_unknown_route_stops_with_a_clear_message(prepared: Path, server: FakeOpenAIServer, tmp_path: Path) -> None:
    model = OpenAIModel(GenerationSettings(server.url.removesuffix("/v1") + "/nothing", "fake-model"), FAKE_KEY)
    with AnswerCache(tmp_path / "cache.sqlite") as cache, pytest.raises(RunStopped, match="HTTP 404"):
        run_requests(load_requests(prepared, [1]), model, cache, tmp_path / "out", progress=False)


def test_bad_requests_file_names_the_line(tmp_path: Path) -> None:
    good = '{"id": "a-0", "sample_id": "a", "prompt_id": 1, "prompt": "x", "choices": {"A": "a"}, "answer": "A"}\n'
    (tmp_path / "requests.jsonl").write_text(
        good + '{"id": "a-1", "sample_id": "a", "prompt_id": 1, "choices": {"A": "a"}, "answer": "A"}\n',
        encoding="utf-8")
    with pytest.raises(UserError) as error:
        load_requests(tmp_path)
    assert error.value.render().endswith("requests.jsonl, row 2, column prompt: missing prompt")
    (tmp_path / "requests.jsonl").write_text(good.replace('"answer": "A"', '"answer": "D"'), encoding="utf-8")
    with pytest.raises(UserError) as error:
        load_requests(tmp_path)
    assert error.value.render().endswith("row 1, column choices: choices must map letters to texts, and answer be "
                                         "one of the letters")
    with pytest.raises(UserError, match="prepare the release first"):
        load_requests(tmp_path / "nowhere")


def test_model_slug() -> None:
    assert model_slug("Qwen/Qwen2.5-7B-Instruct") == "Qwen-Qwen2.5-7B-Instruct"
    assert model_slug("llama3.1:8b") == "llama3.1-8b"


def test_cli_run_prints_counts_and_cost_never_the_key(prepared: Path, server: FakeOpenAIServer, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    argv = ["eval", "run", "--prepared", str(prepared), "--endpoint", server.url, "--model", "fake-model",
            "--prompt", "1", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""
    assert main(argv[:-1] + ["--price-in", "2", "--price-out", "10"]) == 0
    out = capsys.readouterr().out
    assert "72 requests" in out and "0 sent now, 72 from the cache" in out and "estimated cost 0.0000" in out
    prompt_tokens = sum(token_count(q.prompt) for q in load_requests(prepared, [1]))
    completion_tokens = sum(token_count(fake_answer(q.prompt)) for q in load_requests(prepared, [1]))
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("MY_KEY", FAKE_KEY)
    other_model = [("m2" if arg == "fake-model" else arg) for arg in argv[:-1]]  # one --model per direct run
    assert main(other_model + ["--key-env", "MY_KEY", "--price-in", "2", "--price-out", "10"]) == 0
    out = capsys.readouterr().out
    assert f"tokens in/out {prompt_tokens}/{completion_tokens}" in out
    assert f"estimated cost {(prompt_tokens * 2 + completion_tokens * 10) / 1e6:.4f}" in out
    assert FAKE_KEY not in out
    with sqlite3.connect(tmp_path / "out" / "answer_cache.sqlite") as db:
        assert FAKE_KEY not in json.dumps(db.execute("SELECT * FROM answers").fetchall())


def test_cli_without_key_explains(prepared: Path, server: FakeOpenAIServer, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["eval", "run", "--prepared", str(prepared), "--endpoint", server.url, "--model", "m",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 1
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
