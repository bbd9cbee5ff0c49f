"""The release checks' child process started ahead of its job (``tasks.release.check_child``): the build hands
the job to the waiting child, and a child no build takes is never left running."""

from __future__ import annotations

import os
import signal
import time

import pytest

import tasks.release.check_child as checks
from core import interrupt
from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release, start_release_checks
from tasks.release.write import all_samples_name
from test_release import built_example
from tasks.templates.validate import load_checked


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def no_spares():
    checks._end_children()
    yield
    checks._end_children()


def test_a_warmed_child_takes_the_job(tmp_path_factory, ko_profile, no_spares):
    folder = built_example(tmp_path_factory, ko_profile)
    (folder / "validation.json").unlink(missing_ok=True)
    loaded, _ = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    release = expand_release(loaded.templates, ko_profile, 42)
    checks.warm_up()
    spare = checks._spares[0].pid
    with start_release_checks(folder, ko_profile, release) as child:
        assert child.process.pid == spare and not checks._spares
        report = child.result()
    assert report.success and len(report.outcomes) == 46
    assert (folder / "validation.json").exists() and (folder / all_samples_name("KoBBQ")).exists()


@pytest.mark.slow
def test_a_child_that_reported_is_not_waited_for_and_nothing_outlives_the_command(tmp_path_factory, ko_profile,
                                                                                  no_spares):
    """The build goes on once the child has reported: its interpreter's teardown is not on the release stage's
    path. It stays registered (a signal ends it) until the next build's ``warm_up`` or the command's end, which end
    it if it still runs (a teardown that hangs), so nothing is left running."""
    folder = built_example(tmp_path_factory, ko_profile)
    loaded, _ = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    release = expand_release(loaded.templates, ko_profile, 42)
    firsts = []
    for _ in range(2):
        with start_release_checks(folder, ko_profile, release) as child:
            assert child.result().success
        firsts.append(child.process)
        assert checks._ending[-1] is child.process and child.process.pid in interrupt._children
    os.kill(firsts[1].pid, signal.SIGSTOP)  # the second's teardown hangs
    checks.warm_up(0)  # a later build's start: both forgotten, the hung one ended
    assert not checks._ending and not any(running(p.pid) or p.pid in interrupt._children for p in firsts)
    with start_release_checks(folder, ko_profile, release) as child:
        assert child.result().success
    checks._end_children()  # the command's end
    assert not checks._ending and not running(child.process.pid) and child.process.pid not in interrupt._children


def test_a_spare_no_build_takes_ends_with_the_command(no_spares):
    checks.warm_up(2)
    pids = [spare.pid for spare in checks._spares]
    assert len(pids) == 2 and all(running(pid) for pid in pids)
    assert all(pid in interrupt._children for pid in pids)  # a signal ends them too
    checks._end_children()
    assert not any(running(pid) for pid in pids) and not checks._spares
    assert not any(pid in interrupt._children for pid in pids)


def test_warm_up_keeps_the_count_and_replaces_a_dead_spare(no_spares):
    checks.warm_up()
    first = checks._spares[0]
    checks.warm_up()
    assert checks._spares == [first]  # already waiting: nothing more started
    first.kill()
    first.wait()
    checks.warm_up()
    assert len(checks._spares) == 1 and checks._spares[0] is not first and checks._spares[0].poll() is None


@pytest.mark.slow
def test_a_spare_whose_parent_goes_away_exits_by_itself(no_spares):
    """A build killed with SIGKILL cannot end its spare: the spare's stdin closes, and it exits once imported."""
    process = checks.CheckChild()
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=120) == 0
    interrupt.unregister_child(process.pid)


LEAN_CHILD = """
import importlib.util
import json
import sys
from pathlib import Path
from tasks.release import checks
checks.lean_imports()
print(importlib.util.find_spec("sqlalchemy"))  # the optional-dependency probe libraries use: None, not raised
staged = checks.SampleSet.staged(Path(sys.argv[1]))
report = checks.validate_release(staged, staged, sys.argv[2], {})
print(json.dumps(report.as_json(), sort_keys=True))
print(*[type(sys.modules.get(name)).__name__ for name in ("altair", "scipy.stats", "sqlalchemy")])
"""


@pytest.mark.subprocess
def test_the_child_runs_the_suite_without_charts_statistics_or_sql(tmp_path_factory, ko_profile):
    """The child's lean import (``checks.lean_imports``): the suite gives the result it gives with every library,
    altair and scipy.stats were never loaded (deferred), SQLAlchemy never imported (hidden), and a library's probe
    for it finds nothing, as when it is not installed."""
    import json
    import subprocess
    import sys

    from core.paths import PROJECT_ROOT
    from tasks.release import checks as suite

    folder = built_example(tmp_path_factory, ko_profile)
    parquet = folder / all_samples_name("KoBBQ").replace(".tsv", ".parquet")
    unknown = ko_profile.release.unknown_expression
    expected = suite.validate_release(suite.SampleSet.staged(parquet), suite.SampleSet.staged(parquet), unknown, {})
    done = subprocess.run([sys.executable, "-c", LEAN_CHILD, str(parquet), unknown], capture_output=True, text=True,
                          timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    probe, report, modules = done.stdout.splitlines()
    assert probe == "None"
    assert json.loads(report) == expected.as_json() and not expected.success  # a failure's rows and examples too
    assert modules == "_LazyModule _LazyModule NoneType"


@pytest.mark.slow
def test_a_child_that_cannot_report_says_why_in_the_build(tmp_path, no_spares):
    """A child that ends without its report (here: its Parquet file is not there) is the build's error, raised
    when the build waits for the report, with the file the child could not read; it is not waited for again."""
    from tasks.release.check_child import ValidationChild

    checks.warm_up()
    child = ValidationChild(tmp_path, "KoBBQ_all_samples.parquet", "KoBBQ_test_samples.parquet", "unknown",
                            {"age": 4})
    with pytest.raises(OSError) as raised:
        child.result()
    assert str(tmp_path / "KoBBQ_all_samples.parquet") in str(raised.value)
    assert child.process.returncode is not None and child.process.pid not in interrupt._children
    child.process.end()  # what the build's with-block does then: nothing left to end


SHADOW = "open('shadow-ran', 'w').close()\n"


@pytest.mark.slow
def test_the_working_folder_cannot_shadow_the_childs_module(tmp_path, monkeypatch, no_spares):
    """A command run in a folder holding its own ``tasks`` package starts the project's checks, not that one's."""
    for package in ("tasks", "tasks/release"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(SHADOW, encoding="utf-8")
    (tmp_path / "tasks" / "release" / "checks.py").write_text(SHADOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    process = checks.CheckChild()
    assert process.stdin is not None
    process.stdin.close()  # no job: the project's child exits 0 once its library is imported
    assert process.wait(timeout=120) == 0, process.stderr_text()
    interrupt.unregister_child(process.pid)
    assert not (tmp_path / "shadow-ran").exists()


def started_job(folder):
    """A child given the example's release checks (started, not waited for)."""
    from tasks.release.check_child import ValidationChild

    return ValidationChild(folder, all_samples_name("KoBBQ").replace(".tsv", ".parquet"),
                           "KoBBQ_test_samples.parquet", "알 수 없음", {"age": 4})


@pytest.mark.slow
@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGTERM])
def test_a_child_ended_by_a_signal_is_one_line_naming_it(tmp_path_factory, ko_profile, no_spares, sent):
    folder = built_example(tmp_path_factory, ko_profile)
    child = started_job(folder)
    os.kill(child.process.pid, sent)
    with pytest.raises(UserError) as raised:
        child.result()
    message = str(raised.value)
    assert f"ended by {sent.name} before it reported; nothing was published" in message and "\n" not in message
    assert child.process.pid not in interrupt._children


@pytest.mark.slow
def test_a_stopped_child_is_given_up_after_the_bound_with_lines_while_waiting(tmp_path_factory, ko_profile, no_spares,
                                                                            monkeypatch):
    folder = built_example(tmp_path_factory, ko_profile)
    monkeypatch.setenv("KOBBQ_CHECKS_STALL", "3")
    child = started_job(folder)
    os.kill(child.process.pid, signal.SIGSTOP)
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(UserError, match="made no progress for 3 s .* was ended; nothing was published; build again, "
                                        "or give it longer with KOBBQ_CHECKS_STALL=SECONDS"):
        child.process.wait_for("reported", said.append)
    assert 3 <= time.monotonic() - started < 30
    assert len(said) == 2 and all("still waiting" in line for line in said)
    assert child.process.poll() is not None and child.process.pid not in interrupt._children


BROKEN = "raise ImportError('a broken install')\n"


@pytest.mark.slow
def test_a_library_that_cannot_be_imported_stops_the_build_before_its_flow_run(tmp_path):
    """The build checks the child's import before Prefect starts: one line, nothing written, no flow run."""
    import subprocess
    import sys

    (tmp_path / "lib" / "great_expectations").mkdir(parents=True)
    (tmp_path / "lib" / "great_expectations" / "__init__.py").write_text(BROKEN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib"), "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run([sys.executable, "-m", "kobbq", "build", "--out", str(tmp_path / "out")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert errors == ["error: Great Expectations cannot be imported (ImportError: a broken install); nothing was "
                      "built; reinstall the project (pip install -e .) and build again"]
    assert not (tmp_path / "out" / "KoBBQ-example").exists()
