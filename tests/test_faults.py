"""Fault injection: a build killed with SIGKILL, SIGTERM or SIGINT at each phase.

Each build pauses at one phase (``core.interrupt.checkpoint``, ``KOBBQ_PAUSE_AT``) and gets the signal
there. After each: SIGTERM and SIGINT end it within 5 s with exit 143 / 130, one line and no
traceback, every child process ended and no staging folder left; after a SIGKILL the next command
in the same build folder ends what it left running and removes its leftovers. In every case the
previous release is byte-identical, or (a signal during the two renames of publication, which
waits for them) the new one is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.fingerprint import sha256_file
from core.interrupt import is_running
from core.paths import EXAMPLE_TEMPLATES

pytestmark = [pytest.mark.subprocess, pytest.mark.flow]

PHASES = ["start-up", "loading", "expansion", "writing", "validation", "publish"]
SIGNALS = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT]
BUILD = [sys.executable, "-m", "kobbq", "build", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded",
         "--out", "out", "--quiet"]


def release_files(release: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(release.iterdir()) if p.is_file()}


def complete(release: Path) -> bool:
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    return all(sha256_file(release / name) == digest for name, digest in manifest["outputs"].items()
               if name != "manifest.json")


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """A published release of the example, copied into each case's folder: ``BUILD``'s plan run in this process
    without Prefect (the runner alone; the builds that are killed start their own temporary server, the child on
    record), which ``BUILD`` itself then finds up to date."""
    from core.profile import load_profile
    from tasks.pipeline.plan import templates_plan
    from tasks.pipeline.run import execute

    folder = tmp_path_factory.mktemp("previous")
    profile = load_profile("ko")
    plan = templates_plan(EXAMPLE_TEMPLATES, folder / "out", profile, corrections=profile.existing_file("corrections"),
                          test_split="seeded")
    assert execute(plan).finished
    done = subprocess.run(BUILD, cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "out/KoBBQ: up to date, " in done.stdout, done.stdout + done.stderr
    return folder / "out"


# Three temporary servers start side by side: at load 15 one took over the build's 90 s (core.runtime) and the build
# failed before its phase. Prefect's setting, as a user on a busy machine would set it; the phase's deadline is 600 s.
STARTUP = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600"}


def start(case: Path, phase: str) -> subprocess.Popen:
    """Output to files, not pipes: after a SIGKILL the orphaned children would hold a pipe open."""
    env = {**os.environ, **STARTUP, "KOBBQ_PAUSE_AT": phase, "KOBBQ_PAUSE_FILE": str(case / "paused")}
    with (case / "stderr.txt").open("w") as stderr:
        return subprocess.Popen([*BUILD, "--force"], cwd=case, env=env, stdout=subprocess.DEVNULL, stderr=stderr)


def signal_each_as_it_pauses(phase: str, cases: dict[signal.Signals, tuple[Path, subprocess.Popen]]
                             ) -> dict[signal.Signals, list[tuple[int, int]]]:
    """Each build given its signal as soon as it has paused, whichever pauses first: a pause lasts at most
    ``interrupt.PAUSE_SECONDS`` (120 s), and a build left paused while another is waited for (minutes apart at load
    10) would time out, finish and remove the run record read here. Each build's recorded children."""
    recorded: dict[signal.Signals, list[tuple[int, int]]] = {}
    deadline = time.monotonic() + 600  # three builds starting Prefect side by side: minutes at load 10
    while len(recorded) < len(cases):
        for signum, (case, process) in cases.items():
            if signum not in recorded and (case / "paused").exists():
                recorded[signum] = signalled(phase, signum, case, process)
            elif signum not in recorded:
                assert process.poll() is None, (case / "stderr.txt").read_text()
        assert time.monotonic() < deadline, "the builds never reached their phase"
        time.sleep(0.1)
    return recorded


def recorded_children(case: Path, pid: int) -> list[tuple[int, int]]:
    record = json.loads((case / "out" / f".kobbq-run-{pid}.json").read_text(encoding="utf-8"))
    return [(c["pid"], c["start"]) for c in record["children"]]


@pytest.mark.parametrize("phase", PHASES)
def test_a_build_killed_at_each_phase_leaves_nothing_behind(tmp_path, previous, phase):
    cases = {}
    before = release_files(previous / "KoBBQ")
    for signum in SIGNALS:  # the three signals of one phase run side by side
        case = tmp_path / signum.name
        shutil.copytree(previous, case / "out")
        cases[signum] = (case, start(case, phase))
    recorded = signal_each_as_it_pauses(phase, cases)  # all three, before any next command runs
    for signum, (case, _) in cases.items():
        after_next = subprocess.run(BUILD, cwd=case, capture_output=True, text=True, timeout=600)
        assert after_next.returncode == 0, after_next.stderr
        assert not [c for c in recorded[signum] if is_running(*c)], f"{signum.name} at {phase}: orphans left"
        leftovers = [p.name for p in (case / "out").iterdir() if p.name.startswith((".staging-", ".retired-"))]
        assert leftovers == []
        release = case / "out" / "KoBBQ"
        if phase == "publish" and signum != signal.SIGKILL:
            assert complete(release)  # the signal waited for the renames: the new release, whole
        else:
            assert release_files(release) == before  # the previous release, untouched


def signalled(phase: str, signum: signal.Signals, case: Path, process: subprocess.Popen) -> list[tuple[int, int]]:
    """The build paused at ``phase`` given ``signum``; what SIGTERM and SIGINT promise checked; its recorded children
    (a SIGKILLed build's are the next command's to end)."""
    children = recorded_children(case, process.pid)
    assert children, "Prefect's API server runs as a child and is on record"
    sent = time.monotonic()
    process.send_signal(signum)
    process.wait(timeout=60)
    waited = time.monotonic() - sent
    stderr = (case / "stderr.txt").read_text()
    if signum != signal.SIGKILL:
        assert waited < 5, f"{signum.name} at {phase}: exit took {waited:.1f} s"
        assert process.returncode == {signal.SIGTERM: 143, signal.SIGINT: 130}[signum]
        assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith("interrupted")
        assert not [c for c in children if is_running(*c)], f"{signum.name} at {phase}: children left"
        assert not list((case / "out").glob(".staging-*"))
    return children
