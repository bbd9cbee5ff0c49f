"""The command line: user errors are one paragraph and exit code 1, never a traceback; nothing written."""

from __future__ import annotations

import os
import signal
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT

# The example templates cannot produce the ko profile's official test split: they ask for the seeded draw.
BUILD_EXAMPLE = ["--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded"]

pytestmark = pytest.mark.subprocess


def kobbq(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kobbq", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


PROGRESS_LINE = re.compile(r"^\[ *[0-9.]+s\] ")  # "[   1.9s] loaded 14 template rows ...": progress, not an error


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 1 and one error paragraph on stderr (after the progress lines of what was done before it)."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    error = "".join(error_lines(result))
    assert error.startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in error


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    """stderr without the progress lines."""
    return [line for line in result.stderr.splitlines(keepends=True) if not PROGRESS_LINE.match(line)]


def test_unknown_profile(tmp_path):
    result = kobbq("build", "--profile", "klingon", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert_user_error(result, "unknown profile 'klingon'", "ko")
    assert not (tmp_path / "out").exists()


def test_missing_template_file(tmp_path):
    result = kobbq("build", "--templates", "nope.tsv", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert_user_error(result, "nope.tsv", "does not exist")
    assert not (tmp_path / "out").exists()


def test_malformed_template_file_lists_every_error_and_builds_nothing(tmp_path):
    lines = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("\ta\t", "\tq\t", 1)
    lines[3] = lines[3].replace("[N1: 20대 직장인과, 30대 직장인과]", "[N1: 20대 직장인과]", 1)
    broken = tmp_path / "broken.tsv"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = kobbq("build", "--templates", str(broken), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert_user_error(result, "nothing was built", "row 2, column version", "row 4, column Ambiguous_context")
    assert not (tmp_path / "out").exists()


def test_validate_exit_codes(tmp_path):
    ok = kobbq("validate", str(EXAMPLE_TEMPLATES), cwd=tmp_path)
    assert ok.returncode == 0 and "0 error(s)" in ok.stdout
    text = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").replace("\tb\t", "\tbiased\t", 1)
    bad = tmp_path / "bad.tsv"
    bad.write_text(text, encoding="utf-8")
    result = kobbq("validate", str(bad), "--no-corrections", cwd=tmp_path)
    assert result.returncode == 1
    assert f"error: {bad}, row 3, column version: version 'biased' is not one of a, b, c, d" in result.stdout


def test_missing_column_names_the_file(tmp_path):
    bad = tmp_path / "cols.tsv"
    bad.write_text("Category\tID\nAge\t1\n", encoding="utf-8")
    result = kobbq("validate", str(bad), cwd=tmp_path)
    assert_user_error(result, str(bad), "missing required column(s)")


def test_help_lists_the_commands():
    result = subprocess.run([sys.executable, "-m", "kobbq", "--help"], capture_output=True, text=True,
                            cwd=PROJECT_ROOT)
    assert result.returncode == 0
    for command in ("build", "validate"):
        assert command in result.stdout


def test_duplicate_header_column_is_named(tmp_path):
    bad = tmp_path / "dup.tsv"
    lines = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join([lines[0] + "\tCategory", *(line + "\tAge" for line in lines[1:])]) + "\n",
                   encoding="utf-8")
    result = kobbq("validate", str(bad), cwd=tmp_path)
    assert_user_error(result, f"{bad}, row 1: duplicate column(s) Category")


def test_builds_in_separate_processes_are_byte_identical(tmp_path, prefect_api_url):
    """Other process, other hash seed, other working folder and output folder: the same release bytes (both
    builds report to the session's Prefect server rather than each starting a temporary one)."""
    import os

    outputs = []
    for seed, folder in (("1", "a"), ("987", "b")):
        work = tmp_path / folder
        work.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed, "PREFECT_API_URL": prefect_api_url}
        result = subprocess.run([sys.executable, "-m", "kobbq", "build", *BUILD_EXAMPLE,
                                 "--out", "out", "--quiet"], cwd=work, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        outputs.append(work / "out" / "KoBBQ")
    names = sorted(p.name for p in outputs[0].iterdir() if p.is_file())
    assert "manifest.json" in names and "audit.html" in names
    for name in names:
        assert (outputs[0] / name).read_bytes() == (outputs[1] / name).read_bytes(), name


def _long_cell_templates(tmp_path: Path, length: int) -> Path:
    lines = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    cells = lines[1].split("\t")
    column = header.index("Ambiguous_context")
    cells[column] = cells[column] + " " + "가" * length
    path = tmp_path / "long.tsv"
    path.write_text("\n".join([lines[0], "\t".join(cells), *lines[2:]]) + "\n", encoding="utf-8")
    return path


def test_a_cell_longer_than_the_csv_module_default_is_read(tmp_path):
    """csv's default limit is 131,072 characters: such a cell used to crash every command reading the file."""
    path = _long_cell_templates(tmp_path, 200_000)
    for args in (["validate", str(path)], ["particles", "check", "--templates", str(path)],
                 ["diff", str(path), str(EXAMPLE_TEMPLATES)]):
        result = kobbq(*args, cwd=tmp_path)
        assert "Traceback" not in result.stderr and "field larger than field limit" not in result.stderr, args
        assert result.returncode in (0, 1), args


def test_a_cell_over_the_stated_limit_is_one_located_error(tmp_path):
    path = _long_cell_templates(tmp_path, 1_100_000)
    result = kobbq("validate", str(path), cwd=tmp_path)
    assert_user_error(result, f"{path}, row 2: a cell is longer than 1,048,576 characters")


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + EXAMPLE_TEMPLATES.read_bytes())
    result = kobbq("validate", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Category" not in result.stderr


def test_an_output_folder_that_cannot_be_written_fails_at_once_in_one_line(tmp_path):
    """Decided before Prefect starts: the API address is one nothing listens on, so a refusal that needed Prefect
    would be about the server. "At once" is bounded in processor time (the command and the children it waited
    for), which a loaded machine does not stretch as it does the wall clock (65 s seen at a load of 10)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = kobbq("build", *BUILD_EXAMPLE, "--out", str(blocker / "out"), cwd=tmp_path,
                   env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert_user_error(result, str(blocker / "out"), "cannot write to this folder", "choose another --out")
    assert len(error_lines(result)) == 1
    # 4.5 s measured here at a load of 10 (start-up, reading and expanding the templates, without Prefect)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 12


def test_a_second_concurrent_build_is_refused_before_prefect_starts(tmp_path):
    env = {**os.environ, "KOBBQ_PAUSE_AT": "loading", "KOBBQ_PAUSE_FILE": str(tmp_path / "paused")}
    first = subprocess.Popen([sys.executable, "-m", "kobbq", "build", *BUILD_EXAMPLE, "--out",
                              "out", "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "paused").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        # An API address nothing listens on: a refusal that needed Prefect would fail differently.
        second = subprocess.run([sys.executable, "-m", "kobbq", "build", *BUILD_EXAMPLE,
                                 "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"})
        assert_user_error(second, "another build", "is writing this release")
        assert len(error_lines(second)) == 1
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=60)


def test_the_command_exits_with_its_exit_handlers_threads_and_code(tmp_path):
    """``kobbq`` ends the way the interpreter does (``cli.run``): an exit handler the command's libraries
    registered runs (Prefect's workers drain that way), a thread still working is waited for first, the error
    paragraph reaches stderr, and the exit code is the command's."""
    marker = tmp_path / "handler-ran"
    script = (
        "import atexit, sys, threading, time\n"
        "from pathlib import Path\n"
        "from kobbq import cli\n"
        f"marker = Path({str(marker)!r})\n"
        "atexit.register(lambda: marker.write_text(marker.read_text() + 'handler', encoding='utf-8'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), marker.write_text('thread,', encoding='utf-8'))).start()\n"
        f"sys.argv = ['kobbq', 'why', 'x-001', '--release', {str(tmp_path / 'no-release')!r}]\n"
        "cli.run()\n"
        "print('not reached')\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=300)
    assert_user_error(result, "no-release")
    assert "not reached" not in result.stdout
    assert marker.read_text(encoding="utf-8") == "thread,handler"


IDLE_POOL = """from concurrent.futures import ThreadPoolExecutor
POOL = ThreadPoolExecutor(max_workers=1)  # left open, as a library may leave one (asyncio's default executor)
POOL.submit(int).result()
"""


def test_a_command_ends_while_its_process_holds_an_idle_thread_pool(tmp_path):
    """An idle pool's workers stop when the interpreter says it is exiting (``threading._shutdown``); an exit
    that joined the threads by hand and skipped that waited for them for ever."""
    (tmp_path / "sitecustomize.py").write_text(IDLE_POOL, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PROJECT_ROOT)])}
    result = subprocess.run([sys.executable, "-m", "kobbq", "why", "x-001", "--release", str(tmp_path / "none")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert_user_error(result, "none")
