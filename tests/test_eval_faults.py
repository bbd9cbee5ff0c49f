"""The evaluation commands under faults, as a user meets them: two `eval run` at once on one folder, a signal
in the middle of `eval prepare` or `eval run`, and a disk that fills during `eval prepare`, `eval run` (the answer
cache) and `eval score`. Each ends in one line, pays nothing twice and leaves no half-written folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_openai import FAKE_KEY, FakeOpenAIServer, FakeState
from fuzzing import run_in_process
from tasks.evaluation.answer_cache import prompt_sha256

pytestmark = pytest.mark.subprocess
KOBBQ = [sys.executable, "-m", "kobbq"]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def last_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


def cached(cache: Path) -> int:
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.fixture()
def prepared(previous_prepared: Path) -> Path:
    return previous_prepared


def recording(prepared: Path, path: Path) -> Path:
    lines = [json.dumps({"id": r["id"], "prompt_id": r["prompt_id"], "prompt_sha256": prompt_sha256(r["prompt"]),
                         "raw": "답: (A)", "status": "ok"}, ensure_ascii=False)
             for r in map(json.loads, (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_second_eval_run_on_the_same_out_is_refused_and_nothing_is_paid_twice(prepared: Path,
                                                                                 tmp_path: Path) -> None:
    """Before: both runs sent (and paid for) every request."""
    out = tmp_path / "runs"
    # After five answers the server holds the first run's requests until the second has been refused: on a loaded
    # machine the first run could otherwise finish before the second one starts.
    server = FakeOpenAIServer(state=FakeState(hold_after=5)).start()
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    argv = [*KOBBQ, "eval", "run", "--prepared", str(prepared), "--endpoint", server.url, "--model", "fake-model",
            "--out", str(out), "--concurrency", "1", "--quiet"]
    try:
        first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while cached(out / "answer_cache.sqlite") < 5 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        server.state.hold_after = None  # answer from now on; the held request is dropped and the client retries it
        server.state.release.set()
        first_out, first_err = first.communicate(timeout=300)
    finally:
        server.stop()
    assert second.returncode == 1
    assert second.stderr.splitlines() == [f"error: {out}: another `kobbq eval run` (pid {first.pid}) is answering "
                                          "into this folder; wait for it to finish (two runs at once would each pay "
                                          "for the same answers)"]
    assert first.returncode == 0, first_err
    prompts = {json.loads(line)["prompt"] for line in (prepared / "requests.jsonl").read_text().splitlines()}
    assert sum(server.state.answered.values()) == len(prompts) and server.state.repeated() == {}  # paid once each


def test_sigterm_during_eval_prepare_leaves_the_previous_preparation(previous_release: Path, tmp_path: Path) -> None:
    """Before: 94 MB of half-written files in the real release's folder."""
    out = tmp_path / "prepared"
    assert run_in_process(["eval", "prepare", "--release", str(previous_release), "--prompt-ids", "1", "--out",
                           str(out)], tmp_path).code == 0
    (out / "my_notes.md").write_text("mine\n", encoding="utf-8")
    before = tree(out)
    env = {**os.environ, "KOBBQ_PAUSE_AT": "prepare", "KOBBQ_PAUSE_FILE": str(tmp_path / "paused")}
    process = subprocess.Popen([*KOBBQ, "eval", "prepare", "--release", str(previous_release), "--out", str(out)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "paused").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 143
    assert last_line(stderr) == (f"interrupted (SIGTERM): stopped; {out} is as it was before (a preparation is moved "
                                 "in only once complete); nothing is left running")
    assert tree(out) == before  # the user's note included
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paused", "prepared"]  # no staging folder left


def test_preparing_again_with_fewer_prompts_removes_the_old_prompts_files(previous_release: Path,
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "prepared"
    for prompts in ("1,2,3", "2"):
        assert run_in_process(["eval", "prepare", "--release", str(previous_release), "--prompt-ids", prompts,
                               "--out", str(out)], tmp_path).code == 0
        if prompts == "1,2,3":
            (out / "KoBBQ_test" / "my_script.py").write_text("print('mine')\n", encoding="utf-8")
    assert sorted(tree(out)) == ["KoBBQ_test/KoBBQ_test_evaluation_2.json", "KoBBQ_test/KoBBQ_test_evaluation_2.tsv",
                                 "KoBBQ_test/my_script.py", "prepared.json", "prompts.tsv", "requests.jsonl"]
    assert {json.loads(line)["prompt_id"] for line in (out / "requests.jsonl").read_text().splitlines()} == {2}


def test_sigint_during_eval_run_keeps_the_answers_and_says_so(prepared: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    server = FakeOpenAIServer(state=FakeState(hold_after=10)).start()
    try:
        run = subprocess.Popen([*KOBBQ, "eval", "run", "--prepared", str(prepared), "--endpoint", server.url,
                                "--model", "fake-model", "--out", str(out), "--quiet"],
                               env={**os.environ, "OPENAI_API_KEY": FAKE_KEY}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while cached(out / "answer_cache.sqlite") < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=30)
    finally:
        server.stop()
    assert run.returncode == 130
    assert last_line(stderr) == (f"interrupted (SIGINT): stopped; every answer received is kept in "
                                 f"{out / 'answer_cache.sqlite'}: run the same command again to resume; nothing is "
                                 "left running")
    assert "nothing was published" not in stderr and cached(out / "answer_cache.sqlite") == 10


def on_a_full_disk(tmp_path: Path, size_kb: int, setup: str, argv: list[str]) -> tuple[int, str, Path]:
    """Run ``kobbq ARGV`` with ``disk`` a tmpfs of ``size_kb`` (in a mount namespace of its own), after ``setup``
    (shell, run inside); the exit code, stderr and a copy of the disk taken before it is unmounted."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    disk.mkdir()
    script = (f'mount -t tmpfs -o size={size_kb}k tmpfs "{disk}" || exit 77\n{setup}\n'
              f'cd "{tmp_path}" && "$@" 2> "{tmp_path}/stderr.txt"\necho $? > "{tmp_path}/rc"\n'
              f'cp -a "{disk}" "{kept}"\n')
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *KOBBQ, *argv],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if done.returncode == 77 or not (tmp_path / "rc").exists():
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    return int((tmp_path / "rc").read_text()), (tmp_path / "stderr.txt").read_text(encoding="utf-8"), kept


def test_a_full_disk_during_eval_run_is_one_line_and_keeps_the_answers_stored(prepared: Path,
                                                                              tmp_path: Path) -> None:
    """Before: 33 lines of sqlite3 traceback."""
    replay = recording(prepared, tmp_path / "recorded.jsonl")
    code, stderr, kept = on_a_full_disk(tmp_path, 48, "", ["eval", "run", "--prepared", str(prepared), "--replay",
                                                           str(replay), "--model", "m", "--out", "disk/runs",
                                                           "--quiet"])
    assert code == 1
    line = last_line(stderr)
    assert len(stderr.strip().splitlines()) == 1 and line.startswith("error: disk/runs/answer_cache.sqlite: ")
    assert "the disk is full" in line and "run the same command again" in line


def test_a_full_disk_during_eval_prepare_names_the_file_and_keeps_the_previous_one(previous_release: Path,
                                                                                  tmp_path: Path) -> None:
    """Before: no file named, and a half-written folder."""
    previous = tmp_path / "previous"
    assert run_in_process(["eval", "prepare", "--release", str(previous_release), "--prompt-ids", "1", "--out",
                           str(previous)], tmp_path).code == 0
    size_kb = sum(-(-p.stat().st_size // 4096) * 4 for p in previous.rglob("*") if p.is_file()) + 64
    code, stderr, kept = on_a_full_disk(tmp_path, size_kb, f'cp -r "{previous}" "{tmp_path}/disk/prepared"',
                                        ["eval", "prepare", "--release", str(previous_release), "--out",
                                         "disk/prepared"])
    assert code == 1
    line = last_line(stderr)
    assert line.startswith("error: disk/prepared/") and "No space left on device; the disk is full" in line, line
    assert tree(kept / "prepared") == tree(previous)
    assert [p.name for p in kept.iterdir()] == ["prepared"]  # no staging folder left


def answers_file(prepared: Path, path: Path) -> Path:
    path.write_text("sample_id,prediction,prompt_id\n" + "".join(
        f"{r['id']},A,{r['prompt_id']}\n" for r in map(json.loads, (prepared / "requests.jsonl").open())),
        encoding="utf-8")
    return path


def test_a_full_disk_during_eval_score_is_one_line_and_leaves_the_previous_scores(previous_release: Path,
                                                                                   prepared: Path,
                                                                                   tmp_path: Path) -> None:
    """Before: 7 of the 10 files written, and no results.md."""
    answers = answers_file(prepared, tmp_path / "answers.csv")
    previous = tmp_path / "previous"
    assert run_in_process(["eval", "score", "--release", str(previous_release), "--prepared", str(prepared),
                           str(answers), "--out", str(previous), "--no-figures"], tmp_path).code == 0
    size_kb = sum(-(-p.stat().st_size // 4096) * 4 for p in previous.rglob("*") if p.is_file()) + 16
    code, stderr, kept = on_a_full_disk(tmp_path, size_kb, f'cp -r "{previous}" "{tmp_path}/disk/scores"',
                                        ["eval", "score", "--release", str(previous_release), "--prepared",
                                         str(prepared), str(answers), "--out", "disk/scores"])
    assert code == 1
    line = last_line(stderr)
    assert len(stderr.strip().splitlines()) == 1 and line.startswith("error: disk/scores/")
    assert "the disk is full" in line, line
    assert tree(kept / "scores") == tree(previous)
    assert [p.name for p in kept.iterdir()] == ["scores"]  # no staging folder left


def test_every_command_that_writes_refuses_a_read_only_folder_before_its_work(previous_release: Path,
                                                                            prepared: Path, tmp_path: Path) -> None:
    """Before: ``eval score`` scored for 62 s and ``export-lm-eval`` exported for 39 s before finding it. A
    read-only file system (root writes into a folder without write bits, so no chmod can show it)."""
    answers = answers_file(prepared, tmp_path / "answers.csv")
    commands = {"score": ["eval", "score", "--prepared", str(prepared), str(answers), "--out", "disk/out"],
                "export-lm-eval": ["eval", "export-lm-eval", "--prepared", str(prepared), "--out", "disk/out"],
                "prepare": ["eval", "prepare", "--release", str(previous_release), "--out", "disk/out"],
                "run": ["eval", "run", "--prepared", str(prepared), "--replay", str(recording(
                    prepared, tmp_path / "recorded.jsonl")), "--model", "m", "--out", "disk/out"],
                "compare": ["eval", "compare", str(tmp_path / "none.tsv"), "--out", "disk/out"]}
    for name, argv in commands.items():
        (tmp_path / "rc").unlink(missing_ok=True)
        shutil.rmtree(tmp_path / "disk", ignore_errors=True)
        shutil.rmtree(tmp_path / "kept", ignore_errors=True)
        code, stderr, _ = on_a_full_disk(tmp_path, 64, f'mount -o remount,ro "{tmp_path}/disk"', argv)
        assert code == 1 and last_line(stderr) == ("error: disk/out: cannot write to this folder (Read-only file "
                                                   "system); choose another --out, or make it writable"), (name, stderr)


def test_export_lm_eval_takes_the_release_from_the_prepared_folder(previous_release: Path, prepared: Path,
                                                                  tmp_path: Path) -> None:
    """Before: ``export-lm-eval --prepared P`` alone was refused for want of ``--release``."""
    done = run_in_process(["eval", "export-lm-eval", "--prepared", str(prepared), "--out", str(tmp_path / "task")],
                          tmp_path)
    assert done.code == 0, done
    assert (tmp_path / "task" / "utils.py").is_file() and not list(tmp_path.glob(".staging-*"))


@pytest.mark.parametrize("environment", [{"PYTHONIOENCODING": "ascii"}, {"LANG": "C", "LC_ALL": "C"}])
def test_why_on_a_stdout_that_cannot_encode_korean_escapes_it(example_release: Path, environment: dict) -> None:
    """Before: a UnicodeEncodeError traceback. What the stream's encoding has no character for is written as a
    \\uXXXX escape (a C locale is UTF-8 for Python, so there Korean is printed as it is), on stdout and in an error."""
    env = {**os.environ, "PYTHONIOENCODING": "", **environment}
    done = subprocess.run([*KOBBQ, "why", "age-001", "--release", str(example_release)], capture_output=True, env=env)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    out = done.stdout.decode("utf-8")
    assert out.startswith("Age|1: IN THE RELEASE")
    assert ("\\u" in out) == (environment.get("PYTHONIOENCODING") == "ascii")
    failed = subprocess.run([*KOBBQ, "why", "노인", "--release", str(example_release)], capture_output=True, env=env)
    assert failed.returncode == 1 and len(failed.stderr.splitlines()) == 1, failed.stderr
    assert failed.stderr.startswith(b"error: ") and b"Traceback" not in failed.stderr
