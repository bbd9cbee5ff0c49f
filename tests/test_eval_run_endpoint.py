"""A dead or refusing endpoint stops ``kobbq eval run`` in one line, within seconds (issue 25, point 2).

Before: ``--endpoint http://127.0.0.1:9/v1`` retried every request for ~13.7 s behind a progress
bar (12 of the example's 360 requests after a minute), and a server that died mid-run cost the
same per remaining request. The fast tests drive the ``ConnectionWatch`` with a clock of their
own and the real openai client over a transport that refuses every connection; the slow ones
run the command against the fake server on 127.0.0.1, killed with SIGKILL mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import openai
import pytest

from fake_openai import FAKE_KEY, FakeOpenAIServer, FakeState, fake_answer, write_prepared
from tasks.evaluation import client
from tasks.evaluation.answer_cache import GenerationSettings
from tasks.evaluation.client import ConnectionWatch, EndpointDown, OpenAIModel, RunStopped, WatchedHttpClient

FAKE_SERVER = Path(__file__).with_name("fake_openai.py")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_blip_is_not_a_dead_server() -> None:
    clock = Clock()
    watch = ConnectionWatch(down_after=1.0, failures=3, clock=clock)
    assert not watch.failed("refused") and not watch.failed("refused")
    clock.now += 5.0
    watch.succeeded()  # the server answered again: the count starts over
    assert not watch.failed("refused")
    clock.now += 2.0
    assert not watch.failed("refused")  # two failures only, however far apart
    assert not watch.down


def test_failures_over_the_window_mark_the_endpoint_down_for_good() -> None:
    clock = Clock()
    watch = ConnectionWatch(down_after=1.0, failures=3, clock=clock)
    assert not watch.failed("a") and not watch.failed("b") and not watch.failed("c")  # three at once: a blip
    clock.now += 1.0
    assert watch.failed("[Errno 111] Connection refused")
    watch.succeeded()
    assert watch.down and watch.last_error == "[Errno 111] Connection refused"


def refusing_client(watch: ConnectionWatch) -> tuple[WatchedHttpClient, list[str]]:
    attempts: list[str] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        attempts.append(request.url.path)
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    return WatchedHttpClient(watch, transport=httpx2.MockTransport(refuse)), attempts


def test_the_openai_client_stops_retrying_once_the_endpoint_is_down() -> None:
    clock = Clock()
    watch = ConnectionWatch(down_after=1.0, failures=3, clock=clock)
    http, attempts = refusing_client(watch)
    watch.failed("refused")
    watch.failed("refused")
    clock.now += 1.0  # the client's attempt comes a second after the first two failures
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=5, http_client=http)
    with pytest.raises(EndpointDown, match="Connection refused"):
        client.models.list()
    assert attempts == ["/v1/models"]  # the third failure marks it down: none of the 5 retries is made
    with pytest.raises(EndpointDown):
        client.models.list()
    assert len(attempts) == 1  # down: nothing more is sent


def test_a_live_endpoint_resets_the_count() -> None:
    clock = Clock()
    watch = ConnectionWatch(down_after=1.0, failures=3, clock=clock)
    http = WatchedHttpClient(watch, transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json={})))
    watch.failed("refused")
    watch.failed("refused")
    http.get("http://127.0.0.1:9/v1/models")
    clock.now += 2.0
    assert not watch.failed("refused")


def model_over(monkeypatch: pytest.MonkeyPatch, answer, api_key: str = "sk-mine") -> OpenAIModel:
    """An ``OpenAIModel`` whose HTTP client answers with ``answer(request)`` (no network), the check not retried."""
    monkeypatch.setattr(client, "CHECK_RETRIES", 0)
    monkeypatch.setattr(client, "WatchedHttpClient",
                        lambda watch: WatchedHttpClient(watch, transport=httpx2.MockTransport(answer)))
    return OpenAIModel(GenerationSettings("http://10.0.0.5:8000/v1", "m"), api_key)


def failing(error: type[httpx2.TransportError], text: str):
    def answer(request: httpx2.Request) -> httpx2.Response:
        raise error(text, request=request)
    return answer


def test_check_refuses_an_endpoint_that_cannot_be_connected_to(monkeypatch: pytest.MonkeyPatch) -> None:
    for error, text in ((httpx2.ConnectError, "[Errno 111] Connection refused"), (httpx2.ConnectTimeout, "timed out"),
                        (httpx2.ConnectError, "[Errno -2] Name or service not known")):
        with pytest.raises(RunStopped) as stopped:
            model_over(monkeypatch, failing(error, text)).check()
        assert stopped.value.message == (f"cannot connect to http://10.0.0.5:8000/v1 ({text}); check --endpoint and "
                                         "that the server is running")


def test_check_refuses_a_refused_key_unless_the_key_is_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse = lambda request: httpx2.Response(401, json={"error": {"message": "Incorrect API key provided"}})  # noqa: E731
    with pytest.raises(RunStopped, match="refused the key") as stopped:
        model_over(monkeypatch, refuse, api_key="sk-secret-42").check()
    assert "sk-secret-42" not in stopped.value.message
    model_over(monkeypatch, refuse).check(key_required=False)  # the workers hold the key (--deployment)


def test_check_refuses_an_endpoint_that_connects_and_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connected but silent is not alive: the models listing of a live server answers at once."""
    with pytest.raises(RunStopped) as stopped:
        model_over(monkeypatch, failing(httpx2.ReadTimeout, "timed out")).check()
    assert stopped.value.message == ("http://10.0.0.5:8000/v1 accepts connections but did not list its models within "
                                     "10 s: the server is stalled or still starting; check it, then run the same "
                                     "command again")


def test_timeouts_without_any_answer_for_the_bound_mark_the_endpoint_stalled() -> None:
    clock = Clock()
    watch = ConnectionWatch(clock=clock, stalled_after=60.0)
    clock.now += 30.0
    assert not watch.timed_out("timed out")  # one request timeout: a slow answer, perhaps
    clock.now += 20.0
    watch.succeeded()  # something came back: the server is alive, the bound starts again
    clock.now += 61.0
    assert not watch.timed_out("timed out") and not watch.stopped  # one slow request after a pause: not a stall
    clock.now += 1.0
    assert watch.timed_out("timed out") and watch.stalled and watch.stopped  # two timeouts, 62 s of silence
    watch.succeeded()
    assert watch.stalled  # for the rest of the run


def test_default_request_timeout_stops_a_silent_server_within_about_a_minute() -> None:
    model = OpenAIModel(GenerationSettings("http://10.0.0.5:8000/v1", "m"), "k")
    assert model.timeout_seconds == client.REQUEST_SECONDS == 30.0
    assert model.watch.stalled_after == 60.0  # no answer at all for 60 s stops the run (before: never)


@pytest.mark.parametrize("answer", [
    lambda request: httpx2.Response(404, json={"error": {"message": "no route"}}),  # no models listing
    lambda request: httpx2.Response(503, json={"error": {"message": "loading"}}),  # busy: the requests back off
    lambda request: httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]}),
])
def test_check_leaves_a_live_endpoint_to_the_requests(monkeypatch: pytest.MonkeyPatch, answer) -> None:
    model_over(monkeypatch, answer).check()


# --- the command, against the fake server ------------------------------------------------------------


@pytest.fixture()
def prepared(example_release: Path, tmp_path: Path) -> Path:
    return write_prepared(example_release, tmp_path / "prepared", prompts=(1, 2))


def run_argv(prepared: Path, endpoint: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kobbq", "eval", "run", "--prepared", str(prepared), "--endpoint", endpoint,
            "--model", "fake-model", "--out", str(out), *extra]


def kobbq_env(key: str = FAKE_KEY) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": key}


def cached(cache: Path) -> int:
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.subprocess
def test_dead_endpoint_is_one_line_before_any_progress_bar(prepared: Path, tmp_path: Path, closed_port) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    done = subprocess.run(run_argv(prepared, dead, tmp_path / "out"), env=kobbq_env(), capture_output=True, text=True)
    elapsed = time.monotonic() - started
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: cannot connect to {dead} ([Errno 111] Connection refused); "
                                        "check --endpoint and that the server is running"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == [".eval-run.lock"]  # no cache, no answer files
    print(f"dead endpoint refused in {elapsed:.1f} s (command start-up included)")


@pytest.mark.subprocess
def test_refused_key_is_one_line_and_no_request_is_sent(prepared: Path, tmp_path: Path) -> None:
    server = FakeOpenAIServer().start()
    try:
        done = subprocess.run(run_argv(prepared, server.url, tmp_path / "out"), env=kobbq_env("sk-wrong-key-777"),
                              capture_output=True, text=True)
    finally:
        server.stop()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"error: {server.url} refused the key (HTTP 401: Error code: 401 - Incorrect "
                                        "API key provided)"]
    assert "sk-wrong-key-777" not in done.stderr
    assert server.state.models_listed == 1 and not server.state.received  # checked, nothing asked


@pytest.mark.subprocess
def test_deployment_checks_the_endpoint_before_dispatching(prepared: Path, tmp_path: Path, closed_port) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    env = {**kobbq_env(), "PREFECT_API_URL": f"http://127.0.0.1:{closed_port()}/api"}  # never reached
    done = subprocess.run(run_argv(prepared, dead, tmp_path / "out", "--deployment", "kobbq-model-run/local"),
                          env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"error: cannot connect to {dead} ([Errno 111] Connection refused); "
                                        "check --endpoint and that the server is running"]


def start_fake_server() -> tuple[subprocess.Popen, str]:
    """The fake server in a process of its own (so that it can be SIGKILLed), answering in 0.1 s, on a port the
    system picks as it binds; its endpoint."""
    server = subprocess.Popen([sys.executable, str(FAKE_SERVER), "serve", "--port", "0", "--delay", "0.1"],
                              stdout=subprocess.PIPE, text=True)
    said = server.stdout.readline()
    assert said.startswith("fake OpenAI server at http://127.0.0.1:"), said
    return server, said.split()[4]


@pytest.mark.subprocess
def test_server_killed_mid_run_stops_it_within_seconds_and_a_rerun_resumes(prepared: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cache = out / "answer_cache.sqlite"
    server, endpoint = start_fake_server()
    try:
        run = subprocess.Popen(run_argv(prepared, endpoint, out, "--concurrency", "4"), env=kobbq_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while cached(cache) < 20 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        server.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        _, stderr = run.communicate(timeout=120)
        stopped_after = time.monotonic() - killed
    finally:
        server.kill()
        server.wait()
    kept = cached(cache)
    assert run.returncode == 1 and 20 <= kept < 144
    assert stderr.splitlines()[-1] == (f"error: lost the connection to {endpoint} ([Errno 111] Connection refused); "
                                       "the answers received are kept in the answer cache: run the same command again "
                                       "once the server is back")
    assert stopped_after < 15, stopped_after  # before: ~13.7 s per remaining request, 4 at a time (~7 min)
    assert not (out / "fake-model").exists()  # no answer files from half a run
    print(f"stopped {stopped_after:.1f} s after the server was killed, {kept} answers kept")

    again = FakeOpenAIServer(int(endpoint.rsplit(":", 1)[1].split("/")[0])).start()  # back, on the same address
    try:
        resumed = subprocess.run(run_argv(prepared, endpoint, out, "--quiet"), env=kobbq_env(), capture_output=True,
                                 text=True)
    finally:
        again.stop()
    assert resumed.returncode == 0, resumed.stderr
    assert sum(again.state.received.values()) == 144 - kept and again.state.repeated() == {}  # nothing asked twice
    rows = [json.loads(line) for line in (out / "fake-model" / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    prompts = {(r["prompt_id"], r["id"]): r["prompt"] for r in map(json.loads, (prepared / "requests.jsonl").open())}
    assert [r["raw"] for r in rows] == [fake_answer(prompts[(r["prompt_id"], r["id"])]) for r in rows]
    assert len(rows) == 144


@pytest.mark.subprocess
def test_server_that_never_answers_is_one_line_at_the_model_check(prepared: Path, tmp_path: Path) -> None:
    silent = FakeOpenAIServer(state=FakeState(never_answer=True)).start()
    try:
        done = subprocess.run(run_argv(prepared, silent.url, tmp_path / "out", "--timeout", "2"), env=kobbq_env(),
                              capture_output=True, text=True, timeout=120)
    finally:
        silent.stop()
    elapsed = time.monotonic() - silent.state.held_since  # from the model check on: the start-up is the machine's
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {silent.url} accepts connections but did not list its models within "
                                        "2 s: the server is stalled or still starting; check it, then run the same "
                                        "command again"]
    assert silent.state.models_listed == 1 and not silent.state.bodies  # nothing asked, nothing paid
    assert elapsed < 15, elapsed


@pytest.mark.subprocess
@pytest.mark.parametrize("timeout", [None, "2"])
def test_server_that_stops_answering_mid_run_stops_the_run_in_one_line(prepared: Path, tmp_path: Path,
                                                                       timeout: str | None) -> None:
    """After 20 answers every request is held unanswered. The defaults (30 s per attempt, 5 retries, 4 in flight)
    used to keep the example at 20/144 for hours; now no answer at all for two timeouts stops the run."""
    out = tmp_path / "out"
    server = FakeOpenAIServer(state=FakeState(hold_after=20)).start()
    try:
        done = subprocess.run(run_argv(prepared, server.url, out, *(("--timeout", timeout) if timeout else ())),
                              env=kobbq_env(), capture_output=True, text=True, timeout=300)
    finally:
        server.stop()
    elapsed = time.monotonic() - server.state.held_since  # from the first request held: start-up is the machine's
    seconds = float(timeout or client.REQUEST_SECONDS)
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 1 and last.startswith(f"error: {server.url} accepted connections but sent no answer for ")
    assert last.endswith(f" s (each attempt timed out after {seconds:g} s, --timeout): the server is stalled or "
                         "overloaded; the answers received are kept in the answer cache: check the server, then run "
                         "the same command again (or give a longer --timeout for a slow model)")
    assert cached(out / "answer_cache.sqlite") == 20 and not (out / "fake-model").exists()
    assert 2 * seconds <= elapsed < 4 * seconds + 15, elapsed
    print(f"--timeout {seconds:g}: stopped after {elapsed:.1f} s")
