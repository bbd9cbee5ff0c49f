"""Benchmark: a KoBBQ-sized evaluation shared by 1, 2 and 4 Prefect workers; prints requests/s, scaling and per-unit overhead.

    .venv/bin/python benchmarks/bench_distributed.py [--workers 1,2,4] [--repeats 3] [--latency 0.05] [--poll 2]

34,200 requests (2,280 test samples x 3 orders x 5 prompts; a synthetic prepared folder of
that size) go through ``kobbq eval run --deployment kobbq-model-run/shared``: the command
orchestrates and every (prompt, shard) unit runs on a process worker of the pool ``kobbq``.
The fake OpenAI server runs in its own process with a fixed latency per answer and a request
log, counted after each evaluation (nothing may be answered twice); the Prefect server is set
up as docs/several-machines.md sets it up (authentication, leases on disk) and uses PostgreSQL
where Debian's package is installed (SQLite otherwise, or with ``--database sqlite``). Each
worker takes one unit at a time (``--limit 1``), looks for new runs every ``--poll`` seconds
(``PREFECT_WORKER_QUERY_SECONDS``; the guide recommends 2, Prefect's default is 10), and a unit
keeps ``--concurrency`` requests in flight, so one worker's ideal rate is concurrency / latency.
Times are wall clock from the command's start to its exit (the Prefect client, the units'
process start-up and the answer files included), each repeat with a new answer cache.

Per-unit overhead, from the server's record of every unit run (medians over all runs of a worker
count): *pickup*, from the moment a worker's slot was free (its previous unit ended, or the run
was created) to the worker taking the run (Pending), mostly its poll; *start-up*, from Pending to
the unit's answering task starting (a new process, the deployment's pull step, imports, the
flow engine); *wrap-up*, from the task's end to the run's end; and *gap*, between one unit's
answering ending and the next one's starting on the same worker, what a slot loses per unit.
Everything runs on this machine, so the workers share its cores with the fake server, the
Prefect server and PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_eval_run import KOBBQ_TEST_REQUESTS, synthetic_requests  # noqa: E402
from fake_openai import FAKE_KEY, count_log  # noqa: E402
from prefect_cluster import Cluster, free_port, postgres_binaries  # noqa: E402

MODEL = "bench-model"
AUTH = "bench:not-a-real-secret"


def write_prepared(folder: Path, count: int) -> Path:
    """A prepared folder (requests.jsonl, prepared.json) of ``count`` synthetic KoBBQ-shaped requests."""
    folder.mkdir(parents=True, exist_ok=True)
    choices = {"A": "손님", "B": "할아버지", "C": "알 수 없음"}
    with (folder / "requests.jsonl").open("w", encoding="utf-8") as handle:
        for r in synthetic_requests(count):
            handle.write(json.dumps({"id": r.id, "sample_id": r.sample_id, "prompt_id": r.prompt_id, "prompt": r.prompt,
                                     "choices": choices, "answer": "C"}, ensure_ascii=False) + "\n")
    (folder / "prepared.json").write_text(json.dumps({"release": "synthetic", "requests": count}), encoding="utf-8")
    return folder


def one_evaluation(cluster: Cluster, prepared: Path, out: Path, endpoint: str, args: argparse.Namespace) -> float:
    command = [sys.executable, "-m", "kobbq", "eval", "run", "--prepared", str(prepared), "--endpoint", endpoint,
               "--model", MODEL, "--out", str(out), "--deployment", "kobbq-model-run/shared", "--quiet",
               "--concurrency", str(args.concurrency), "--shards", str(args.shards)]
    # The command runs this checkout's code, as the units do (kobbq_code_dir): not whatever is installed.
    env = {**cluster.client_env("orchestrator"), "OPENAI_API_KEY": FAKE_KEY, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cluster.root, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"evaluation failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    return elapsed


@dataclass(frozen=True)
class UnitTimes:
    """One unit run as the server recorded it (seconds since the epoch)."""

    worker: str
    created: float
    pending: float
    answering: tuple[float, float]  # the answer-model-prompt task's start and end
    end: float


def unit_times(cluster: Cluster, since: float) -> list[UnitTimes]:
    """Every unit run created after ``since``, with its worker and the times of its phases."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    times = []
    with temporary_settings({PREFECT_API_URL: cluster.api_url, PREFECT_API_AUTH_STRING: AUTH}):
        with get_client(sync_client=True) as client:
            runs = [r for r in client.read_flow_runs(limit=200) if r.parameters.get("unit")
                    and r.created.timestamp() >= since and r.state.is_completed()]
            tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[r.id for r in runs])))
            answering = {t.flow_run_id: (t.start_time.timestamp(), t.end_time.timestamp()) for t in tasks
                         if t.name.startswith("answer-model-prompt") and t.start_time and t.end_time}
            for run in runs:
                pending = min(s.timestamp.timestamp() for s in client.read_flow_run_states(run.id) if s.is_pending())
                times.append(UnitTimes(run.labels.get("prefect.worker.name", "?"), run.created.timestamp(), pending,
                                       answering[run.id], run.end_time.timestamp()))
    return times


def overheads(times: list[UnitTimes]) -> dict[str, list[float]]:
    """Pickup, start-up, wrap-up and gap of every unit run (see the module's docstring)."""
    found: dict[str, list[float]] = {"pickup": [], "start-up": [], "wrap-up": [], "gap": []}
    for worker in {t.worker for t in times}:
        mine = sorted((t for t in times if t.worker == worker), key=lambda t: t.pending)
        previous = None
        for unit in mine:
            free_since = max(unit.created, previous.end) if previous else unit.created
            found["pickup"].append(unit.pending - free_since)
            found["start-up"].append(unit.answering[0] - unit.pending)
            found["wrap-up"].append(unit.end - unit.answering[1])
            if previous:
                found["gap"].append(unit.answering[0] - previous.answering[1])
            previous = unit
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts to measure (default: 1,2,4)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per answer (default: 0.05)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight per unit (default: 8)")
    parser.add_argument("--shards", type=int, default=2, help="units per prompt (default: 2, so 10 units)")
    parser.add_argument("--poll", type=float, default=2.0,
                        help="seconds between a worker's looks for new runs (default: 2, as the guide recommends)")
    parser.add_argument("--requests", type=int, default=KOBBQ_TEST_REQUESTS)
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default=None)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    database = args.database or ("postgresql" if postgres_binaries() else "sqlite")
    with tempfile.TemporaryDirectory(prefix="kobbq-bench-dist-") as folder, Cluster(Path(folder)) as cluster:
        prepared = write_prepared(cluster.root / "prepared", args.requests)
        port = free_port()
        log = cluster.root / "fake-requests.jsonl"
        cluster.start([sys.executable, str(ROOT / "tests" / "fake_openai.py"), "serve", "--port", str(port),
                       "--delay", str(args.latency), "--log", str(log)], {"PATH": "/usr/bin:/bin"}, cluster.root,
                      cluster.root / "fake.log")
        endpoint = f"http://127.0.0.1:{port}/v1"
        cluster.start_server(cluster.start_postgres() if database == "postgresql" else None, auth=AUTH)
        cluster.prefect("work-pool", "create", "kobbq", "--type", "process")
        cluster.prefect("--no-prompt", "deploy", "--all", cwd=ROOT)
        cluster.prefect("variable", "set", "kobbq_code_dir", str(ROOT))
        print(f"{args.requests:,} requests, {args.latency * 1000:.0f} ms per answer, {args.concurrency} in flight per "
              f"unit, {5 * args.shards} units, worker poll {args.poll:g} s, Prefect server on {database}; "
              f"medians of {args.repeats}", flush=True)
        workers: list = []
        rates: dict[int, float] = {}
        for count in counts:
            while len(workers) < count:
                workers.append(cluster.start_worker(f"worker-{len(workers) + 1}", limit=1, extra_env={
                    "OPENAI_API_KEY": FAKE_KEY, "PREFECT_WORKER_QUERY_SECONDS": f"{args.poll:g}"}))
            since = time.time() - 1
            times = [one_evaluation(cluster, prepared, cluster.root / f"out-{count}-{n}", endpoint, args)
                     for n in range(args.repeats)]
            rates[count] = args.requests / statistics.median(times)
            ideal = count * args.concurrency / args.latency
            print(f"{count} worker(s): {statistics.median(times):6.1f} s, {rates[count]:6.1f} requests/s "
                  f"(x{rates[count] / rates[counts[0]]:.2f} of {counts[0]} worker(s); ideal rate {ideal:.0f}/s; "
                  f"runs {', '.join(f'{t:.1f}' for t in times)} s)", flush=True)
            found = overheads(unit_times(cluster, since))
            print("    per unit (median): " + ", ".join(f"{name} {statistics.median(values):.1f} s"
                                                        for name, values in found.items() if values)
                  + f"; {len(found['pickup'])} unit runs", flush=True)
        evaluations = len(counts) * args.repeats  # each with a new answer cache: every prompt once in each
        answered = count_log(log).answered
        wrong = {key: n for key, n in answered.items() if n != evaluations}
        print(f"fake server: {sum(answered.values()):,} answers for {len(answered):,} prompts; "
              + (f"{len(wrong)} prompt(s) not answered exactly once per evaluation" if wrong
                 else f"every prompt answered exactly once in each of the {evaluations} evaluations"), flush=True)

if __name__ == "__main__":
    main()
