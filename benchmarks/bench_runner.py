"""What a command costs besides its work, in one run: every figure next to its reference, and the goals as ratios.

    .venv/bin/python benchmarks/bench_runner.py [--runs 3] [--skip-memory] [--k 5]

Printed, each a median of --runs runs in new processes (a noisy 2-core machine: the load average is printed
with each figure; a command compared with a reference runs in turn with it, so that a load that changes during the
run weighs on both), after compiling the checkout's modules as installing it would (``compile_checkout``):

1. ``kobbq --help`` against ``python -c "import prefect"`` (goal: at most 0.5x);
2. the commands that only read, on the real release: ``kobbq status`` of the real pipeline, ``kobbq why`` of a
   template, ``kobbq diff`` of the pipeline's release against the direct build's (goal: status and why at most
   1x ``import prefect``), an up-to-date ``kobbq build --templates`` (goal: at most 0.5x, no child, no Prefect);
   none of them may import Prefect (checked);
3. a one-task Prefect flow and the real ``kobbq build --templates ... --force``, each with Prefect's temporary
   API (``KOBBQ_PREFECT_SERVER=temporary``) and against one running server (``prefect server start --background``
   in a home of its own), the two commands of a pair run in turn: goal, the real build at most 2.5x the one-task
   flow on the same server; then with no server configured, the background server the first build starts and
   the next reuses, against the user's server (goal: at most 1.2x);
4. the real pipeline's stages (``kobbq build --pipeline templates_raw/real/kobbq_release.toml --force``, on the
   server): seconds per stage, from the build's own progress lines;
5. peak memory of ``kobbq build --templates`` at 1x and --k times the real templates (``bench_scale``'s
   builds; goal: within 1.15x).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_scale import CORRECTIONS, build_once, replicate_corrections, replicate_templates

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
REAL_TEMPLATES = DATA / "kobbq" / "KoBBQ_templates.tsv"
REAL_PIPELINE = ROOT / "templates_raw" / "real" / "kobbq_release.toml"
KOBBQ = [sys.executable, "-m", "kobbq"]
ONE_TASK_FLOW = """
from prefect import flow, task
@task
def one():
    return 1
@flow
def one_task():
    return one()
one_task()
"""
PROGRESS = re.compile(r"^\[\s*([0-9.]+)s\] ([a-z-]+): (done|unchanged)", re.MULTILINE)


def load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def wall(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of ``command``, which must succeed."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def alternated(first: list[str], second: list[str], env: dict[str, str], runs: int,
               second_env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Median wall seconds of two commands run in turn (first, second, first, ...), so that a machine that slows
    down or speeds up during the runs weighs on both figures of a ratio alike; ``second_env``: the second's own."""
    pairs = [(wall(first, env), wall(second, second_env or env)) for _ in range(runs)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs), load()


def compile_checkout() -> None:
    """Compile the project's modules, as installing a package does (pip compiles what it installs, Prefect
    included). A machine with PYTHONDONTWRITEBYTECODE set (this one) never writes them for an editable
    checkout, so each command would compile its ~150 modules again (~0.5 s) while Prefect's come compiled."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *[str(ROOT / p) for p in ("core", "tasks", "flows",
                                                                                       "kobbq")]], check=True)


def imports_prefect(command: list[str], env: dict[str, str]) -> bool:
    done = subprocess.run([sys.executable, "-X", "importtime", *command[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    return bool(re.search(r"\|\s+prefect$", done.stderr, re.MULTILINE))


def show(label: str, seconds: float, where: str, reference: float | None = None, goal: float | None = None) -> None:
    ratio = "" if reference is None else f"  = {seconds / reference:.2f}x the reference"
    verdict = "" if goal is None else ("  (goal <= %.1fx: %s)" % (goal, "met" if seconds / reference <= goal
                                                                   else "NOT met"))
    print(f"{label:58} {seconds:7.2f} s  ({where}){ratio}{verdict}", flush=True)


def start_server(home: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """``prefect server start --background`` in a home of its own, on a free port; its URL and the clients' env."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Telemetry off, as the README starts it: without network access the background server stops at its first report.
    server_env = {**env, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    subprocess.run([str(Path(sys.executable).with_name("prefect")), "server", "start", "--background", "--host",
                    "127.0.0.1", "--port", str(port)], env=server_env, check=True, capture_output=True, timeout=300)
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return url, {**server_env, "PREFECT_API_URL": url}
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the Prefect server did not start")


def stage_times(log: str) -> list[tuple[str, float]]:
    """(stage, seconds) from a pipeline build's progress lines: each stage's line minus the line before it."""
    marks = [(float(seconds), stage) for seconds, stage, _ in PROGRESS.findall(log)]
    started = float(re.search(r"^\[\s*([0-9.]+)s\] flow started", log, re.MULTILINE).group(1))
    times, before = [], started
    for seconds, stage in marks:
        times.append((stage, seconds - before))
        before = seconds
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (medians are printed)")
    parser.add_argument("--k", type=int, default=5, help="the larger release of the memory figure: k x the real one")
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    if not REAL_TEMPLATES.exists():
        raise SystemExit(f"the real data is not at {DATA}")
    base_env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    compile_checkout()
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as scratch:
        work = Path(scratch)
        temporary = {**base_env, "PREFECT_HOME": str(work / "temporary-home"), "KOBBQ_PREFECT_SERVER": "temporary"}

        print("1. start-up (each command run in turn with the reference; medians)")
        reference = [sys.executable, "-c", "import prefect"]
        prefect_import, seconds, where = alternated(reference, [*KOBBQ, "--help"], temporary, args.runs)
        show("python -c 'import prefect' (the reference)", prefect_import, where)
        show("kobbq --help", seconds, where, prefect_import, 0.5)

        print("2. the real release, built (temporary API), then read")
        pipeline_out, direct_out = work / "pipeline", work / "direct"
        subprocess.run([*KOBBQ, "build", "--pipeline", str(REAL_PIPELINE), "--out", str(pipeline_out), "--quiet"],
                       cwd=ROOT, env=temporary, check=True, capture_output=True)
        direct = [*KOBBQ, "build", "--profile", "ko", "--templates", str(REAL_TEMPLATES), "--out", str(direct_out),
                  "--quiet"]
        subprocess.run(direct, cwd=ROOT, env=temporary, check=True, capture_output=True)
        readers = {
            "kobbq status (the real pipeline)": ["status", "--pipeline", str(REAL_PIPELINE), "--out",
                                                 str(pipeline_out)],
            "kobbq why race_ethnicity_nationality-027": ["why", "race_ethnicity_nationality-027", "--release",
                                                         str(direct_out / "KoBBQ")],
            "kobbq diff (pipeline's release vs direct build's)": ["diff", str(pipeline_out / "KoBBQ"),
                                                                 str(direct_out / "KoBBQ")],
            "kobbq build --templates, up to date": direct[len(KOBBQ):],
        }
        for label, argv in readers.items():
            prefect_now, seconds, where = alternated(reference, [*KOBBQ, *argv], temporary, args.runs)
            goal = 1.0 if label.startswith(("kobbq status", "kobbq why")) else 0.5 if "up to date" in label else None
            show(label, seconds, where, prefect_now, goal)
            if imports_prefect([*KOBBQ, *argv], temporary):
                print(f"  {label}: imports Prefect", flush=True)

        print("3. flows: temporary API, then one running server")
        flow = [sys.executable, str(work / "one_task.py")]
        (work / "one_task.py").write_text(ONE_TASK_FLOW, encoding="utf-8")
        forced = [*direct, "--force"]
        print("  (each pair run in turn; medians)")
        flow_temporary, seconds, where = alternated(flow, forced, temporary, args.runs)
        show("one-task flow, temporary API", flow_temporary, where)
        show("real kobbq build --templates --force, temporary API", seconds, where, flow_temporary)
        url, on_server = start_server(work / "server-home", base_env)
        try:
            subprocess.run(flow, cwd=ROOT, env=on_server, capture_output=True)  # the server's first run is slower
            flow_server, seconds, where = alternated(flow, forced, on_server, args.runs)
            show(f"one-task flow, server {url}", flow_server, where)
            show("real kobbq build --templates --force, same server", seconds, where, flow_server, 2.5)

            print("3b. no server configured: the background server the first build starts, reused by the next")
            background = {k: v for k, v in base_env.items() if k != "KOBBQ_PREFECT_SERVER"}
            background["PREFECT_HOME"] = str(work / "background-home")
            try:
                subprocess.run(forced, cwd=ROOT, env=background, check=True, capture_output=True)  # starts it
                on_background, on_own, where = alternated(forced, forced, background, args.runs, on_server)
                show("real kobbq build --templates --force, the user's server", on_own, where)
                show("the same, the background server (a second build in a row)", on_background, where, on_own, 1.2)
            finally:
                subprocess.run([str(Path(sys.executable).with_name("prefect")), "server", "stop"], env=background,
                               capture_output=True, timeout=120)

            print("4. the real pipeline's stages (--force, on the server)")
            done = subprocess.run([*KOBBQ, "build", "--pipeline", str(REAL_PIPELINE), "--out", str(pipeline_out),
                                   "--force"], cwd=ROOT, env=on_server, capture_output=True, text=True, check=True)
            for stage, seconds in stage_times(done.stderr):
                print(f"  {stage:14} {seconds:6.2f} s", flush=True)
            print(f"  ({load()})")
        finally:
            subprocess.run([str(Path(sys.executable).with_name("prefect")), "server", "stop"], env=on_server,
                           capture_output=True, timeout=120)

        if not args.skip_memory:
            print(f"5. peak memory, 1x and {args.k}x the real templates (largest process of the build)")
            peaks = {}
            for k in (1, args.k):
                run = build_once(replicate_templates(REAL_TEMPLATES, k, work),
                                 replicate_corrections(CORRECTIONS, k, work), work / f"scale_x{k}")
                peaks[k] = max(run.peak_mb.values())
                print(f"  {k}x: {run.samples:,} samples, peak {peaks[k]:.0f} MB (build {run.peak_mb['build']:.0f}, "
                      f"validation child {run.peak_mb['validation']:.0f}, Prefect server {run.peak_mb['server']:.0f}); "
                      f"{load()}", flush=True)
                shutil.rmtree(work / f"scale_x{k}", ignore_errors=True)
            ratio = peaks[args.k] / peaks[1]
            print(f"  {args.k}x / 1x: {ratio:.2f} (goal <= 1.15: {'met' if ratio <= 1.15 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
