"""Evaluation across machines: deployments from a clean clone, a lost worker, a server on PostgreSQL.

Every process runs on 127.0.0.1 (``tests/prefect_cluster.py``). The tests share one Prefect server, deployed to
once (``server``); each test's workers and commands are stopped when it ends (``cluster``).
The reference is an uninterrupted direct run (``run_requests``, no Prefect) against a second
fake server: the distributed answer files must be byte-identical to it. The fake model server
logs every request (``--log``'s ``RequestLog``), and no prompt may ever be answered twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from fake_openai import FAKE_KEY, FakeOpenAIServer, RequestLog, count_log, write_prepared
from prefect_cluster import PREFECT, Cluster, descendants, kill_tree, postgres_binaries

pytestmark = pytest.mark.flow

MODEL = "model-a"
BRANCH = "kobbq-under-test"
AUTH = "kobbq:not-a-real-secret"
# A worker machine's environment: the endpoint's key, and the worker poll docs/several-machines.md recommends.
WORKER_ENV = {"OPENAI_API_KEY": FAKE_KEY, "PREFECT_WORKER_QUERY_SECONDS": "2"}


def answer_files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*")) if path.is_file()}


def direct_run(prepared: Path, out: Path, model: str) -> dict[str, bytes]:
    """The uninterrupted run on one machine: what every distributed run must reproduce byte for byte."""
    from tasks.evaluation.answer_cache import AnswerCache, GenerationSettings
    from tasks.evaluation.client import OpenAIModel
    from tasks.evaluation.runs import load_requests, run_requests

    server = FakeOpenAIServer().start()
    try:
        with AnswerCache(out / "answer_cache.sqlite") as cache:
            run_requests(load_requests(prepared), OpenAIModel(GenerationSettings(server.url, model), FAKE_KEY),
                         cache, out, progress=False)
    finally:
        server.stop()
    return answer_files(out / model)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this checkout's last commit, on a branch the workers' pull step clones (the module's tests
    share it: a test that edits it undoes the edit)."""
    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip("not a git checkout: the deployments' pull step clones one")
    target = tmp_path_factory.mktemp("clone") / "clone"
    subprocess.run(["git", "clone", "-q", str(PROJECT_ROOT), str(target)], check=True, timeout=120)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", "-B", BRANCH], check=True, timeout=60)
    return target


@pytest.fixture(scope="module")
def server(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One Prefect server for the module's tests, as the guide sets it up (PostgreSQL under it when installed, Prefect's
    authentication), with the pool, deployments and variables deployed once from the clean clone.

    A server start and a deployment cost ~40 s of CPU each time; the tests can share one because each test's runs
    name its own folders in their parameters (``unit_runs``, ``orchestrating_runs``) and its machines (``cluster``)
    stop when it ends, so no worker of one test takes another's runs (a module's tests run one at a time in a
    process; each pytest-xdist process has a server of its own).
    """
    with Cluster(tmp_path_factory.mktemp("server")) as cluster:
        cluster.start_server(cluster.start_postgres() if postgres_binaries() else None, auth=AUTH)
        deploy(cluster, clone)
        yield cluster


@pytest.fixture
def cluster(server: Cluster, tmp_path: Path) -> Iterator[Cluster]:
    """This test's machines (workers, commands) on the module's server; all stopped when the test ends."""
    root = tmp_path / "cluster"
    root.mkdir()
    with server.machines(root) as machines:
        yield machines
    if server.server is not None and server.server.poll() is not None:  # a test that failed during its outage
        server.restart_server()
    close_the_books(server, tmp_path)


def close_the_books(server: Cluster, folder: Path) -> None:
    """Runs of a test that failed may be left Scheduled or Running: they are cancelled, so that no later test's
    worker takes them up."""
    from prefect.states import Cancelled

    def close(client: object) -> None:
        for run in client.read_flow_runs():
            if run.state is not None and not run.state.is_final() and str(folder) in json.dumps(run.parameters,
                                                                                                   default=str):
                client.set_flow_run_state(run.id, Cancelled(message="its test ended"), force=True)

    read_from_server(server, close)


def deploy(cluster: Cluster, clone: Path) -> None:
    """What a user does once, from a clean clone: the pool, the deployments, where the code comes from.

    The variables are set with Prefect's client, the call ``prefect variable set NAME VALUE`` makes (three such
    commands cost ~15 s of CPU for nothing of this project's).
    """
    from prefect.client.schemas.actions import VariableCreate

    cluster.prefect("work-pool", "create", "kobbq", "--type", "process")
    cluster.prefect("--no-prompt", "deploy", "--all", cwd=clone)
    read_from_server(cluster, lambda client: [client.create_variable(VariableCreate(name=name, value=value)) for
                                              name, value in (("kobbq_repository", str(clone)), ("kobbq_ref", BRANCH),
                                                              ("kobbq_code_dir", str(clone)))])


def head(clone: Path) -> str:
    return subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def logged_fake(folder: Path, delay: float = 0.0) -> tuple[FakeOpenAIServer, Path]:
    """The fake model server with a request log (as ``serve --log``) and ``delay`` seconds per answer."""
    fake = FakeOpenAIServer().start()
    log = folder / "fake-requests.jsonl"
    fake.state.log = RequestLog(log)
    fake.state.delay_seconds, fake.state.slow_times = delay, 10**9 if delay else 0
    return fake, log


def eval_command(cluster: Cluster, prepared: Path, out: Path, endpoint: str, deployment: str,
                 *extra: str) -> list[str]:
    return [sys.executable, "-m", "kobbq", "eval", "run", "--prepared", str(prepared), "--endpoint", endpoint,
            "--model", MODEL, "--out", str(out), "--deployment", deployment, "--quiet", *extra]


def flow_runs(cluster: Cluster) -> list:
    return read_from_server(cluster, lambda client: client.read_flow_runs())


def deployments(cluster: Cluster) -> list:
    return read_from_server(cluster, lambda client: client.read_deployments())


def read_from_server(cluster: Cluster, read, with_auth: bool = True):  # noqa: ANN001, ANN201
    """``read(client)`` with a sync Prefect client of the cluster's server (sending its auth string, or none)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    auth = cluster.env.get("PREFECT_API_AUTH_STRING") if with_auth else None
    with temporary_settings({PREFECT_API_URL: cluster.api_url, PREFECT_API_AUTH_STRING: auth}):
        with get_client(sync_client=True) as client:
            return read(client)


def unit_runs(cluster: Cluster, folder: Path) -> list:
    """The unit runs whose answer cache is under ``folder`` (one test's, or one evaluation's), oldest first."""
    return sorted((r for r in flow_runs(cluster) if r.parameters.get("unit")
                   and r.parameters["unit"]["cache"].startswith(str(folder))), key=lambda r: r.created)


def orchestrating_runs(cluster: Cluster, folder: Path) -> list:
    """The evaluations' runs (one per command) that write under ``folder``, oldest first."""
    return sorted((r for r in flow_runs(cluster) if not r.parameters.get("unit")
                   and str(r.parameters.get("out", "")).startswith(str(folder))), key=lambda r: r.created)


def test_deployments_from_a_clean_clone_run_on_a_worker_elsewhere(clone: Path, cluster: Cluster, example_release: Path,
                                                                   tmp_path: Path) -> None:
    """The module's server was deployed to as a user does once, from a clean clone (``deploy``); both ways a worker
    gets the code run the evaluation's units, each at the commit the command pinned."""
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    expected = direct_run(prepared, tmp_path / "direct", MODEL)
    fake = FakeOpenAIServer().start()
    listed = cluster.prefect("deployment", "ls").stdout
    for name in ("kobbq-model-run/git", "kobbq-model-run/shared", "kobbq-build/git", "kobbq-build/shared"):
        assert name in listed, listed
    # Where the code comes from is decided when a run starts, from the variables (and, for the
    # evaluation's units, the commit the command pinned): no path of the clone.
    git = [{"prefect.deployments.steps.git_clone": {"id": "clone", "branch": "{{ prefect.variables.kobbq_ref }}",
                                                    "repository": "{{ prefect.variables.kobbq_repository }}"}}]
    pinned = [{"prefect.deployments.steps.git_clone": {"id": "clone", "commit_sha": "{{ $KOBBQ_COMMIT }}",
                                                       "repository": "{{ prefect.variables.kobbq_repository }}"}}]
    shared = [{"prefect.deployments.steps.set_working_directory":
               {"directory": "{{ prefect.variables.kobbq_code_dir }}"}}]
    pulls = {"git": git, "pinned": pinned, "shared": shared}
    assert sorted((d.name, next(k for k, v in pulls.items() if v == d.pull_steps)) for d in deployments(cluster)) == [
        ("git", "git"), ("git", "pinned"), ("shared", "shared"), ("shared", "shared")]
    cluster.start_worker("machine-1", limit=4, extra_env=WORKER_ENV)
    orchestrator = tmp_path / "orchestrator"
    orchestrator.mkdir()
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY}
    # The two evaluations at once (two output folders, one unit each on the worker's four slots), as two users would.
    commands = {out: cluster.start(eval_command(cluster, prepared, out, fake.url, deployment), env, orchestrator,
                                   tmp_path / f"{out.name}.log")
                for deployment, out in (("kobbq-model-run/git", tmp_path / "git"),
                                        ("kobbq-model-run/shared", tmp_path / "shared"))}
    for out, command in commands.items():
        assert command.wait(timeout=600) == 0, (tmp_path / f"{out.name}.log").read_text()[-3000:]
        assert answer_files(out / MODEL) == expected
    runs = unit_runs(cluster, tmp_path)
    locks = read_from_server(cluster, lambda client: client.read_global_concurrency_limits())
    # An edit not committed in the shared folder: the units would run code no commit names.
    readme = (clone / "README.md").read_bytes()
    (clone / "README.md").write_bytes(readme + b"an edit made after the pin\n")
    try:
        edited = subprocess.run(eval_command(cluster, prepared, tmp_path / "edited", fake.url,
                                             "kobbq-model-run/shared"), env=env, cwd=orchestrator, capture_output=True,
                                text=True, timeout=600)
    finally:
        (clone / "README.md").write_bytes(readme)  # the module's other tests run the clone's commit
    fake.stop()
    assert edited.returncode == 1 and edited.stderr.splitlines()[-1] == (
        f"error: {clone}: the units' code is not the commit the evaluation pinned ({head(clone)[:12]}): 1 file(s) "
        "changed and not committed: README.md; commit the change (or undo it), then run the same command again: it "
        "pins the code as it is then"), edited.stderr
    # 2 deployments x 1 prompt (shards through a deployment: the lost worker's and the lost-after tests)
    assert len(runs) == 2 and all(r.state.is_completed() for r in runs)
    # Every unit ran the commit the command pinned as it started; the claim is gone once all is done.
    assert {r.parameters["unit"]["code_commit"] for r in runs} == {head(clone)}
    assert not [lock.name for lock in locks if lock.name.startswith(("kobbq-unit-", "kobbq-eval-"))]
    # Two evaluations (two output folders, two caches): every prompt answered once by each.
    assert len(fake.state.answered) == 72 and set(fake.state.answered.values()) == {2}
    # The runs imported the clone's code, not this checkout's: the worker ran in its own folder.
    assert str(PROJECT_ROOT) not in (cluster.root / "machine-1.log").read_text()


def running_engines(pid: int) -> list[int]:
    """The flow-run processes a worker has started."""
    found = []
    for child in descendants(pid):
        try:
            if b"prefect.engine" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            pass
    return found


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def test_losing_a_worker_and_the_orchestrator_costs_only_requests_in_flight(clone: Path, cluster: Cluster,
                                                                           example_release: Path,
                                                                           tmp_path: Path) -> None:
    """PostgreSQL-backed server, two workers; SIGKILL one worker and the orchestrating command mid-flight.

    The worst moment: every unit has requests in flight (held unanswered by the fake server).
    Running the same command again completes the evaluation on the surviving worker: the lost
    worker's runs are marked Crashed once their leases go unrenewed and their units run again.
    """
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package; .ci/run installs it)")
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    expected = direct_run(prepared, tmp_path / "direct", MODEL)
    fake = FakeOpenAIServer().start()
    # After 20 answers every request waits, unanswered, until released: fewer than either unit has (40 and 32), so no
    # unit can finish before the hold and both have requests held.
    fake.state.hold_after = 20
    out = tmp_path / "out"
    # One unit a worker (two shards, two workers of one slot), the endpoint's limit full with them: the lost unit's
    # slot stays taken until its lease lapses, as every slot of the lost worker did with two units a worker.
    workers = [cluster.start_worker(f"machine-{n}", limit=1, extra_env=WORKER_ENV) for n in (1, 2)]
    orchestrator = tmp_path / "orchestrator"
    orchestrator.mkdir()
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY}
    # --lost-after at its floor (20 s): a live unit renews its lease while its requests are held, and
    # test_a_unit_is_never_answered_twice_whatever_lost_after_says shows 20 s takes no live unit for lost under load.
    command = eval_command(cluster, prepared, out, fake.url, "kobbq-model-run/git", "--shards", "2",
                           "--concurrency", "2", "--endpoint-limit", "2", "--lost-after", "20")
    first = cluster.start(command, env, orchestrator, tmp_path / "orchestrator-1.log")
    wait_for(lambda: all(running_engines(w.process.pid) for w in workers) and fake.state.in_flight >= 4
             and sum(fake.state.answered.values()) >= 20, 300, "both workers answering, requests held")
    time.sleep(1)
    in_flight = fake.state.in_flight
    cluster.lose(workers[0])
    kill_tree(first.pid)  # the orchestrating command's machine is lost too
    first.wait(timeout=10)
    fake.state.hold_after = None
    fake.state.release.set()  # the held requests are dropped unanswered (the killed clients are gone)
    second = subprocess.run(command, env=env, cwd=orchestrator, capture_output=True, text=True, timeout=900)
    runs = unit_runs(cluster, tmp_path)
    killed, resumed = orchestrating_runs(cluster, tmp_path)
    fake.stop()
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    # The killed command's run is closed by the next one, which says so.
    assert f"took over from kobbq-model-runs run {killed.name!r} (its command stopped without reporting)" in (
        second.stderr), second.stderr
    assert killed.state.is_crashed() and f"run {resumed.name!r} took over" in killed.state.message
    assert resumed.state.is_completed()
    assert answer_files(out / MODEL) == expected
    assert fake.state.repeated() == {}  # no answer paid twice
    asked_again = sum(n - 1 for n in fake.state.received.values() if n > 1)
    assert asked_again <= in_flight  # re-sent: at most what was in flight when the worker died
    crashed = [r for r in runs if r.state.is_crashed()]
    assert crashed and all("lease was not renewed" in (r.state.message or "") for r in crashed)
    assert len([r for r in runs if r.state.is_completed()]) == 2  # every unit completed once


def test_a_prefect_server_not_there_foreign_or_failing_is_one_line(tmp_path: Path, closed_port) -> None:
    """Before: a traceback ending in ``RuntimeError: Failed to reach API``. Unreachable (nothing listens), foreign
    (an OpenAI-compatible server, whose /health is not Prefect's), failing (a proxy answering 503 while the server
    restarts): each one line naming the URL, what happened and what to do."""
    import http.server
    import threading

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the library's name)
            self.send_error(503)

        def log_message(self, *args: object) -> None:
            pass

    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=failing.serve_forever, daemon=True).start()
    fake = FakeOpenAIServer().start()
    requests = tmp_path / "prepared"
    requests.mkdir()
    (requests / "requests.jsonl").write_text('{"id": "a-0", "sample_id": "a", "prompt_id": 1, "prompt": "q", '
                                             '"choices": {"A": "x", "B": "y"}, "answer": "A"}\n', encoding="utf-8")
    closed = f"http://127.0.0.1:{closed_port()}/api"
    cases = {closed: f"error: no Prefect server answers at {closed} (ConnectError: [Errno 111] Connection refused): "
                     "start it (`prefect server start`), or unset PREFECT_API_URL to run without a work pool",
             f"{fake.url}": f"error: {fake.url} answers, but not as a Prefect API (its /health: HTTP 401): correct "
                            "PREFECT_API_URL (a Prefect server's address ends in /api) or unset it to run without a "
                            "work pool",
             f"http://127.0.0.1:{failing.server_address[1]}/api":
                 f"error: the Prefect server at http://127.0.0.1:{failing.server_address[1]}/api answers HTTP 503 "
                 "(Service Unavailable): it is starting, stopping or failing (its database?): look at its log, then "
                 "run the same command again"}
    commands: dict[str, subprocess.Popen] = {}  # the three at once, each with a home and an output folder of its own
    try:
        for n, url in enumerate(cases):
            env = {**os.environ, "PREFECT_API_URL": url, "PREFECT_HOME": str(tmp_path / f"home-{n}"),
                   "OPENAI_API_KEY": FAKE_KEY}
            env.pop("PREFECT_API_AUTH_STRING", None)
            commands[url] = subprocess.Popen([sys.executable, "-m", "kobbq", "eval", "run", "--prepared", str(requests),
                                              "--endpoint", fake.url, "--model", MODEL, "--out",
                                              str(tmp_path / f"out-{n}"), "--deployment", "kobbq-model-run/git"],
                                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for url, line in cases.items():
            _, said = commands[url].communicate(timeout=120)
            assert commands[url].returncode == 1 and said.splitlines() == [line], said
    finally:
        for command in commands.values():
            if command.poll() is None:
                command.kill()
        fake.stop()
        failing.shutdown()


def refused_without_auth(cluster: Cluster) -> tuple[int, int]:
    """What the API says to a request without the auth string, and what Prefect's client without it gets (in this
    process: a `prefect` command is the same client, started in ~4 s of CPU)."""
    from httpx import HTTPStatusError

    request = urllib.request.Request(f"{cluster.api_url}/flow_runs/filter", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    try:
        read_from_server(cluster, lambda client: client.read_flow_runs(limit=1), with_auth=False)
    except HTTPStatusError as exc:
        return status, exc.response.status_code
    return status, 200


def test_a_unit_is_never_answered_twice_whatever_lost_after_says(clone: Path, cluster: Cluster, example_release: Path,
                                                                 tmp_path: Path) -> None:
    """The reports' cases: ``--lost-after 31`` with heartbeats 30 s apart took a live unit for lost and
    ran it again beside itself (31 requests paid twice); later, on a busy machine (load ~6), four units
    got eight runs, live runs taken for lost while they started. A run is now lost only when it stops
    renewing its unit's lease, which it does with every request: with the shortest ``--lost-after``
    (20 s; the command refuses less, tests/test_arguments.py) each unit (two here, beside the twins) gets one run,
    whatever the load. Two runs of one unit started at once (what a wrong belief would do) answer every prompt once
    between them. The server runs with Prefect's authentication, as the guide sets it up: a client without the auth
    string is refused.
    """
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    expected = direct_run(prepared, tmp_path / "direct", MODEL)
    # 72 requests in two units (shards), one at a time: 30 to 42 requests, 38 to 53 s a unit, twice --lost-after and
    # more, started together on a busy machine: each unit is judged by the orchestrator's 5 s polls some eight times,
    # its start included.
    fake, log = logged_fake(tmp_path, delay=1.25)
    out = tmp_path / "out"
    assert refused_without_auth(cluster) == (401, 401)
    # The command without the auth string, or with another: one line each (before: a 64-line traceback). Both run
    # while the evaluation does: they are refused before they touch anything.
    stranger = {k: v for k, v in cluster.client_env("stranger").items() if k != "PREFECT_API_AUTH_STRING"}
    strangers = {(auth, fix): subprocess.Popen(
        eval_command(cluster, prepared, tmp_path / f"refused-{auth}", fake.url, "kobbq-model-run/git"),
        env={**stranger, "OPENAI_API_KEY": FAKE_KEY, **({"PREFECT_API_AUTH_STRING": auth} if auth else {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for auth, fix in ((None, "set PREFECT_API_AUTH_STRING to the server's auth string"),
                          ("kobbq:wrong", "PREFECT_API_AUTH_STRING is not the server's auth string"))}
    cluster.processes.extend(strangers.values())  # stopped with the test's machines if it fails before they end
    # Two units and, at the same time, two runs of one unit (the twins, model-b), as an orchestrator that took a
    # live run for lost would start them: four runs at once on a worker of four slots.
    cluster.start_worker("machine-1", limit=4, extra_env=WORKER_ENV)
    orchestrator = tmp_path / "orchestrator"
    orchestrator.mkdir()
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY}
    evaluation = cluster.start(eval_command(cluster, prepared, out, fake.url, "kobbq-model-run/git", "--shards", "2",
                                            "--concurrency", "1", "--lost-after", "20"),
                               env, orchestrator, tmp_path / "orchestrator.log")
    from tasks.evaluation.pool import RunUnit
    twin = RunUnit(str(prepared), fake.url, "model-b", 1, str(out / "answer_cache.sqlite"), concurrency=2,
                   code_commit=head(clone))
    job_variables = {"env": {"KOBBQ_COMMIT": head(clone)}}

    def start_twice(client: object) -> list:
        from prefect.deployments import run_deployment

        return [run_deployment("kobbq-model-run/git", parameters={"unit": asdict(twin)}, timeout=0,
                               idempotency_key=f"{twin.key}-twin-{n}", job_variables=job_variables).id
                for n in (1, 2)]

    twins = read_from_server(cluster, start_twice)
    assert evaluation.wait(timeout=900) == 0, (tmp_path / "orchestrator.log").read_text()[-3000:]
    for (auth, fix), process in strangers.items():
        _, said = process.communicate(timeout=120)
        assert process.returncode == 1 and said.splitlines() == [
            f"error: the Prefect server at {cluster.api_url} refused this command (HTTP 401 Unauthorized): "
            f"{fix}" + ("" if auth is None else ": set it to the content of the server's "
                                                "PREFECT_SERVER_API_AUTH_STRING")], said
    deadline = time.monotonic() + 600
    while not all(r.state.is_final() for r in read_from_server(
            cluster, lambda client: [client.read_flow_run(i) for i in twins])):
        assert time.monotonic() < deadline, "the two runs of one unit did not end"
        time.sleep(1)
    twin_runs = read_from_server(cluster, lambda client: [client.read_flow_run(i) for i in twins])
    runs = [r for r in unit_runs(cluster, tmp_path) if r.id not in twins]
    fake.stop()
    assert answer_files(out / MODEL) == expected
    assert len(runs) == 2 and all(r.state.is_completed() for r in runs)  # each unit one run, none taken for lost
    assert all(r.state.is_completed() for r in twin_runs)
    counts = count_log(log)
    assert counts.answered_twice == {} and fake.state.repeated() == {}
    assert sum(n for (model, _), n in counts.answered.items() if model == "model-b") == 72  # one run's worth


def test_a_paused_unit_pays_nothing_twice_and_cancelling_stops_every_unit(cluster: Cluster, example_release: Path,
                                                                          tmp_path: Path) -> None:
    """The report's cases: a unit run stopped (SIGSTOP) for 200 s was taken for lost, a second run answered its
    prompts, then the first resumed and sent its whole queue again (63 of 72 paid twice); and cancelling the
    evaluation's run as Prefect's UI does left every unit running and the run "Cancelling" for good.

    Now the paused run, taken for lost once its lease went unrenewed for ``--lost-after`` (20 s), is revoked
    before the unit runs again, and sends nothing once resumed: what it had in flight when it was paused
    (one request, ``--concurrency 1``) is all that can be asked twice, as for a lost worker. A cancelled
    evaluation stops every unit (running or waiting for a worker) within a poll and a request, and its run
    ends Cancelled.
    """
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1,))
    expected = direct_run(prepared, tmp_path / "direct", MODEL)
    # 72 requests, one at a time: ~18 s for the unit. Whatever the delay, a resumed run that sent its queue again
    # would ask again what the second run had answered: the 0.25 s only keeps both runs alive at once (~8 s).
    fake, log = logged_fake(tmp_path, delay=0.25)
    out = tmp_path / "out"
    worker = cluster.start_worker("machine-1", limit=2, extra_env=WORKER_ENV)
    orchestrator = tmp_path / "orchestrator"
    orchestrator.mkdir()
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY}
    command = eval_command(cluster, prepared, out, fake.url, "kobbq-model-run/git", "--concurrency", "1",
                           "--lost-after", "20")
    first = cluster.start(command, env, orchestrator, tmp_path / "pause.log")
    # Paused while its request is being answered (the fake server holds it 0.25 s): waiting for it, not writing to
    # the answer cache.
    wait_for(lambda: sum(fake.state.answered.values()) >= 10 and fake.state.in_flight == 1, 300,
             "the unit answering")
    paused = running_engines(worker.process.pid)
    assert len(paused) == 1
    os.kill(paused[0], signal.SIGSTOP)
    wait_for(lambda: sum(fake.state.answered.values()) >= 40, 300, "a second run of the unit answering")
    os.kill(paused[0], signal.SIGCONT)  # resumed while the second run answers: it must send nothing more
    assert first.wait(timeout=300) == 0, (tmp_path / "pause.log").read_text()[-3000:]
    lost, second = unit_runs(cluster, out)
    paused_twice = count_log(log).answered_twice

    # Cancel a running evaluation as the UI does (Cancelling): every unit stops, the run ends Cancelled.
    fake.stop()
    (tmp_path / "cancel").mkdir()
    # 12 to 21 requests a unit at 2 s: 24 s a unit and more, so the units are still answering when the cancellation
    # (a `prefect` command, seconds to start on a loaded machine, then the command's 5 s poll) reaches them; at 0.5 s
    # they could all finish first. Two units run (the worker's limit), two wait for it.
    fake, log = logged_fake(tmp_path / "cancel", delay=2.0)
    cancelled_out = tmp_path / "cancelled"
    command_run = cluster.start(eval_command(cluster, prepared, cancelled_out, fake.url, "kobbq-model-run/git",
                                             "--shards", "4", "--concurrency", "1"),
                                env, orchestrator, tmp_path / "cancel.log")
    wait_for(lambda: len(running_engines(worker.process.pid)) == 2 and fake.state.in_flight >= 1, 300,
             "two units answering, two waiting for the worker")
    cluster.prefect("flow-run", "cancel", str(orchestrating_runs(cluster, cancelled_out)[-1].id))
    cancelled_at = time.monotonic()
    assert command_run.wait(timeout=120) == 1
    stopped_within = time.monotonic() - cancelled_at
    wait_for(lambda: not running_engines(worker.process.pid), 60, "the unit processes ending")
    received = sum(fake.state.received.values())
    time.sleep(5)
    asked_after = sum(fake.state.received.values()) - received
    runs = unit_runs(cluster, cancelled_out)
    evaluation = orchestrating_runs(cluster, cancelled_out)[-1]
    fake.stop()
    # Marked Crashed ("its unit's lease was not renewed for 2x s"), then, resumed, it stopped and said why.
    assert lost.state.is_cancelled() and "revoked (taken for lost: its unit's lease was not renewed" in \
        lost.state.message, lost.state
    assert second.state.is_completed()
    assert answer_files(out / MODEL) == expected
    assert len(paused_twice) <= 1, paused_twice  # at most its request in flight, never its queue
    said = (tmp_path / "cancel.log").read_text()
    stopped = [r for r in runs if r.state.is_cancelled()]  # a unit may have finished before the cancellation
    # A run cancelled just after its unit's last answer stopped nothing unfinished: the message counts units the
    # answer cache does not complete, which is what a rerun has left to do.
    from tasks.evaluation.pool import RunUnit
    unfinished = [r for r in stopped if RunUnit(**r.parameters["unit"]).unanswered()]
    assert f"the evaluation was cancelled in Prefect: its {len(unfinished)} unfinished unit run(s) were stopped" in said
    assert stopped_within < 30 and asked_after == 0
    assert evaluation.state.is_cancelled(), evaluation.state
    assert len(runs) == 4 and len(stopped) >= 2 and all(r.state.is_completed() for r in runs if r not in stopped)
    assert count_log(log).answered_twice == {}


# The outage outlasts what Prefect's clients ride out by retrying (5 retries by default, 2 to 32 s apart: about a
# minute), so that only the command's own waiting (``ServerLink``) and the units' independence of the server carry the
# evaluation through it. With 2 retries (2 + 4 s), set for the command and the worker (its unit runs inherit it), a
# 30 s outage is five times what their clients ride out (the report's 100 s was 1.6 times the default's minute).
RIDE_OUT = {"PREFECT_CLIENT_MAX_RETRIES": "2"}
OUTAGE = 30


def test_the_server_tells_the_truth_through_a_signal_a_lost_worker_and_an_outage(
        clone: Path, server: Cluster, cluster: Cluster, example_release: Path, tmp_path: Path) -> None:
    """SIGTERM the command, run it again, SIGKILL the worker process alone, stop the server for ``OUTAGE`` s.

    The first command marks its run Crashed (not Cancelled: Prefect would cancel its subflows, the
    unit runs); the second says it took over and attaches to the
    unit runs still going; the units outlive their worker and the outage, and the second command
    reports them as the server has them (Completed), exits 0 and writes the same files as a
    direct run. Nothing is answered twice. The worker is started as the guide says (from a script,
    in the background, where SIGINT is ignored): one SIGTERM stops such a worker, which it does not
    without the guide's ``env --default-signal=INT``.
    """
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package; .ci/run installs it)")
    prepared = write_prepared(example_release, tmp_path / "prepared", prompts=(1, 2))
    expected = direct_run(prepared, tmp_path / "direct", MODEL)
    # 72 requests a unit, one at a time, 5 s each until the server is back: no unit can end (360 s) before the
    # outage is over, however long the steps before it take on a loaded machine (~60 s here, ~150 s at load 10:
    # a unit ending while the server is away would be reported only after START_SECONDS). They answer all through
    # the outage; once the server is back the rest is answered at once.
    fake, log = logged_fake(tmp_path, delay=5.0)
    out = tmp_path / "out"
    worker_line = ("env --default-signal=INT {prefect} worker start --pool kobbq --name {name} --limit 2 "
                   "--type process & echo $! > worker.pid; wait")
    stopping = start_stopping_workers(cluster)  # they start while the evaluation does
    cluster.start_script("machine-1", worker_line.format(prefect=PREFECT, name="machine-1"), {**WORKER_ENV, **RIDE_OUT})
    orchestrator = tmp_path / "orchestrator"
    orchestrator.mkdir()
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY, **RIDE_OUT}
    command = eval_command(cluster, prepared, out, fake.url, "kobbq-model-run/git", "--concurrency", "1")
    first = cluster.start(command, env, orchestrator, tmp_path / "orchestrator-1.log")
    wait_for(lambda: fake.state.in_flight >= 2, 300, "both units answering")
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=15) == 143
    assert "interrupted (SIGTERM)" in (tmp_path / "orchestrator-1.log").read_text()
    second = cluster.start(command, env, orchestrator, tmp_path / "orchestrator-2.log")
    wait_for(lambda: "took over" in (tmp_path / "orchestrator-2.log").read_text(), 120, "the second command")
    sigterm = one_sigterm(cluster, stopping)
    time.sleep(5)
    worker = int((cluster.root / "machine-1" / "worker.pid").read_text())
    units = running_engines(worker)
    assert len(units) == 2, (cluster.root / "machine-1.log").read_text()[-3000:]
    os.kill(worker, signal.SIGKILL)  # the worker process alone: its two unit runs go on
    time.sleep(5)
    stops = stopped_after(*sigterm)
    server.stop_server()
    time.sleep(OUTAGE)
    server.restart_server()
    fake.state.delay_seconds = 0
    assert second.wait(timeout=600) == 0, (tmp_path / "orchestrator-2.log").read_text()[-3000:]
    runs, (interrupted, resumed) = unit_runs(cluster, tmp_path), orchestrating_runs(cluster, tmp_path)
    for pid in units:  # orphans of the killed worker, if any is left
        kill_tree(pid) if Path(f"/proc/{pid}").exists() else None
    fake.stop()
    said = (tmp_path / "orchestrator-2.log").read_text()
    assert f"took over from kobbq-model-runs run {interrupted.name!r} (Crashed: its command was stopped (SIGTERM)" \
        in said, said
    assert interrupted.state.is_crashed() and resumed.state.is_completed()
    assert len(runs) == 2 and all(r.state.is_completed() for r in runs), [(r.name, r.state) for r in runs]
    assert answer_files(out / MODEL) == expected
    assert count_log(log).answered_twice == {}
    assert stops == {"as the guide starts it": True, "without env --default-signal=INT": False}


STOPPING_POOL = "stopping"  # not the units' pool: these workers run while an evaluation does and must take none of it


def start_stopping_workers(cluster: Cluster) -> dict[str, str]:
    """Two workers started from a script in the background, with and without the guide's fix; their names by how."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    def create_pool(client: object) -> None:
        with suppress(ObjectAlreadyExists):
            client.create_work_pool(WorkPoolCreate(name=STOPPING_POOL, type="process"))

    read_from_server(cluster, create_pool)
    lines = {"as the guide starts it": "env --default-signal=INT {prefect} worker start --pool {pool} --name {name} &"
                                       " echo $! > worker.pid; wait",
             "without env --default-signal=INT": "{prefect} worker start --pool {pool} --name {name} & "
                                                 "echo $! > worker.pid; wait"}
    names = {}
    for n, (how, line) in enumerate(lines.items()):
        names[how] = f"stopping-{n}"
        cluster.start_script(names[how], line.format(prefect=PREFECT, pool=STOPPING_POOL, name=names[how]))
    return names


def one_sigterm(cluster: Cluster, names: dict[str, str]) -> tuple[dict[str, int], float]:
    """One SIGTERM to each worker once it has started; their pids by how they were started, and when."""
    pids = {}
    for how, name in names.items():
        wait_for(lambda: "started" in (cluster.root / f"{name}.log").read_text(errors="replace"), 120, name)
        pids[how] = int((cluster.root / name / "worker.pid").read_text())
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    return pids, time.monotonic()


def stopped_after(pids: dict[str, int], sigterm_at: float, seconds: float = 15) -> dict[str, bool]:
    """Which workers stopped within ``seconds`` of the SIGTERM sent at ``sigterm_at``; the others are killed."""
    time.sleep(max(0.0, sigterm_at + seconds - time.monotonic()))
    stopped = {how: not Path(f"/proc/{pid}").exists() for how, pid in pids.items()}  # the script's sh reaps it
    for pid in pids.values():
        if Path(f"/proc/{pid}").exists():
            kill_tree(pid)
    return stopped
