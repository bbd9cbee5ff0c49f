"""The issue 25 reproductions that need a real ``kobbq`` process, a full disk or a signal: a user's folder is
never replaced, a full disk is one error line (no Prefect traceback) that leaves the previous release as it
was, a signal after publication says the release was published, and ``build --force`` rewrites a corrupt
stage-state file that ``status`` reports.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES
from core.pipeline_file import read_state
from kobbq.cli import main

pytestmark = pytest.mark.subprocess

BUILD = [sys.executable, "-m", "kobbq", "build", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded",
         "--quiet"]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_one_error_line(stderr: str, *fragments: str) -> None:
    assert "Traceback" not in stderr and stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    for fragment in fragments:
        assert fragment in stderr, stderr


def test_a_users_folder_at_the_release_path_survives_the_issues_command(tmp_path):
    """`mkdir -p W/KoBBQ/.git; echo mine > W/KoBBQ/README.md; kobbq build --templates ... --out W` deleted it."""
    (tmp_path / "W" / "KoBBQ" / ".git").mkdir(parents=True)
    (tmp_path / "W" / "KoBBQ" / "README.md").write_text("mine\n", encoding="utf-8")
    before = tree(tmp_path / "W")
    started = time.monotonic()
    result = subprocess.run([*BUILD, "--out", "W"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert_one_error_line(result.stderr, "W/KoBBQ: holds files but no manifest.json, so it is not a release written "
                                         "by kobbq-builder")
    assert time.monotonic() - started < 30  # refused before Prefect's start-up (~5-15 s, more on a busy machine)
    assert tree(tmp_path / "W") == before and [p.name for p in (tmp_path / "W").iterdir()] == ["KoBBQ"]


def test_a_full_disk_is_one_error_line_and_the_previous_release_stays(tmp_path, example_release, prefect_api_url):
    """A real full disk: a tmpfs just larger than the previous release, in a mount namespace of its own. The build
    reports to the session's Prefect API: what is tested is the release's writing, not Prefect's start-up."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    release_kb = sum(-(-p.stat().st_size // 4096) * 4 for p in example_release.rglob("*") if p.is_file())
    size_kb = release_kb + release_kb // 2  # the new release, written beside the previous one, cannot fit
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    disk.mkdir()
    script = (f'mount -t tmpfs -o size={size_kb}k tmpfs "{disk}" || exit 77\n'
              f'cp -r "{example_release}" "{disk}/KoBBQ-example"\n'
              f'cd "{tmp_path}" && "$@" --name KoBBQ-example --out "{disk}" --force 2> "{tmp_path}/stderr.txt"\n'
              f'echo $? > "{tmp_path}/rc"\n'
              f'cp -a "{disk}" "{kept}"\n')
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *BUILD],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PREFECT_API_URL": prefect_api_url})
    if done.returncode == 77 or not (tmp_path / "rc").exists():
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert (tmp_path / "rc").read_text().strip() == "1", stderr
    assert_one_error_line(stderr, f"error: {disk}/KoBBQ-example: ", "No space left on device", "; the disk is full")
    assert tree(kept / "KoBBQ-example") == tree(example_release)  # the previous release, byte for byte
    assert not [p.name for p in kept.iterdir() if p.name.startswith((".staging-", ".retired-"))]


def test_a_signal_after_publication_says_the_release_was_published(tmp_path, prefect_api_url):
    """On the session's Prefect API: the signal's line after publication is tested, not Prefect's start-up (the
    children a signal ends are tests/test_faults.py's)."""
    env = {**os.environ, "KOBBQ_PAUSE_AT": "published", "KOBBQ_PAUSE_FILE": str(tmp_path / "paused"),
           "PREFECT_API_URL": prefect_api_url}
    with (tmp_path / "stderr.txt").open("w") as stderr:
        process = subprocess.Popen([*BUILD, "--out", "out"], cwd=tmp_path, env=env, stderr=stderr)
    deadline = time.monotonic() + 400
    while not (tmp_path / "paused").exists():
        assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr.txt").read_text()
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    said = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert "Traceback" not in said and "nothing was published" not in said
    assert said.strip().splitlines()[-1] == ("interrupted (SIGINT): stopped after out/KoBBQ was published (complete "
                                             "and validated); nothing is left running")
    assert (tmp_path / "out" / "KoBBQ" / "manifest.json").exists()


@pytest.mark.flow
def test_build_force_rewrites_a_corrupt_stage_state_that_status_reports(tmp_path, example_release, capsys):
    out = tmp_path / "out"
    for name in ("KoBBQ-example", "KoBBQ-example.pipeline", "KoBBQ-example.work"):
        shutil.copytree(example_release.parent / name, out / name, symlinks=True)
    (states,) = (out / "KoBBQ-example.pipeline").iterdir()  # the example pipeline's own folder of states
    state = states / "labels.json"
    state.write_text(state.read_text(encoding="utf-8")[:40], encoding="utf-8")  # truncated
    status = ["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", str(out)]
    assert main(status) == 1
    assert f"{state}, row " in capsys.readouterr().err
    assert main(["build", "--out", str(out), "--quiet"]) == 1  # reported, not rewritten, without --force
    assert "kobbq build --force" in capsys.readouterr().err
    assert main(["build", "--out", str(out), "--quiet", "--force"]) == 0
    assert read_state(states, "labels").status == "done"
    capsys.readouterr()
    assert main(status) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["done"] * 7, lines
