"""Shared fixtures: the real data beside the checkout (``../shared/data``) and the project's example.

Two runs: ``pytest`` runs the fast pure-function tests; ``pytest -m slow`` runs the rest (every test
that starts Prefect, a server, a browser or a ``kobbq`` subprocess, or reads the real data). A test is
slow when it carries one of ``SLOW_MARKERS`` or uses a fixture in ``SLOW_FIXTURES``; the mark is added
here, so a new real-data or Prefect test cannot slip into the fast run by forgetting it.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The test run keeps its compiled modules even where PYTHONDONTWRITEBYTECODE is set: otherwise pytest rewrites the
# asserts of every test module and compiles it again in each xdist worker, and the project's changed modules too
# (about 5 s of each worker's ~12 s collection). They go where Python keeps them anyway (__pycache__, ignored by
# git) and are used only while their source is unchanged; the `kobbq` processes the tests start are not affected.
sys.dont_write_bytecode = False

from core.runtime import configure_environment  # noqa: E402

configure_environment()
# Every command a test runs starts Prefect's temporary server, never the background one: a test leaves no server
# running (tests/test_prefect_boundary.py checks the background server with a home of its own, and stops it).
os.environ.setdefault("KOBBQ_PREFECT_SERVER", "temporary")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("KOBBQ_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))


SLOW_MARKERS = {"flow", "realdata", "browser", "subprocess"}
SLOW_FIXTURES = {"shared_data", "prefect_harness", "example_release"}


# The slow run's longest tests (a minute or more each), run first: `-n 2` hands tests out in collection order, and a
# long test handed out last keeps one worker busy while the other has nothing left (about 2 minutes of the run).
LONG_FIRST = ("test_faults.py", "test_fuzz_release_state.py", "test_prefect_boundary.py", "test_prefect_server.py",
              "test_eval_run_endpoint.py", "test_synthetic_culture.py", "test_pipeline_real.py",
              "test_pipeline_example.py", "test_eval_parse.py", "test_fuzz_survey.py", "test_cli.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_MARKERS & {m.name for m in item.iter_markers()} or SLOW_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
    items.sort(key=long_first)


def long_first(item: pytest.Item) -> int:
    """A slow test's rank in ``LONG_FIRST`` (the same on every worker: a stable sort of the same collection); any
    other test after them, in collection order."""
    name = item.path.name
    return LONG_FIRST.index(name) if item.get_closest_marker("slow") and name in LONG_FIRST else len(LONG_FIRST)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real BBQ/KoBBQ files; tests that need them are skipped on a machine without them."""
    if not (SHARED_DATA / "kobbq" / "KoBBQ_templates.tsv").exists():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def kobbq_templates_tsv(shared_data: Path) -> Path:
    return shared_data / "kobbq" / "KoBBQ_templates.tsv"


@pytest.fixture(scope="session")
def kobbq_templates_first_tsv(shared_data: Path) -> Path:
    return shared_data / "kobbq" / "KoBBQ_templates.2024-02-12.tsv"


@pytest.fixture(scope="session")
def survey_result_json(shared_data: Path) -> Path:
    return shared_data / "kobbq" / "KoBBQ_survey_result.json"


@pytest.fixture(scope="session")
def bbq_templates_dir(shared_data: Path) -> Path:
    return shared_data / "bbq" / "templates"


@pytest.fixture(scope="session")
def ko_profile():
    from core.profile import load_profile

    return load_profile("ko")


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API for the whole test session (it costs ~15 s to start).

    Flow tests take this fixture; task bodies are tested through ``task.fn(...)`` without it.
    """
    from prefect.testing.utilities import prefect_test_harness

    # A deadline, not a wait: at load ~15 the start took over 120 s and every test of that worker errored.
    with prefect_test_harness(server_startup_timeout=600):
        yield


@pytest.fixture(scope="session")
def prefect_api_url(prefect_harness) -> str:
    """The session's temporary Prefect API, for ``kobbq`` child processes (``PREFECT_API_URL``) whose test is not
    about Prefect's start-up: a child without it starts a temporary server of its own (5-20 s; over 100 s on a
    loaded machine)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


@pytest.fixture(scope="session")
def example_release(tmp_path_factory: pytest.TempPathFactory, prefect_harness) -> Path:
    """The embedded example's release, as ``kobbq build`` makes it (the whole example pipeline).

    Built once per session, on the session's Prefect API (every test using it is slow): a temporary server of its
    own would be a second Prefect start-up in a worker that has the session's.
    """
    from kobbq.cli import main

    out = tmp_path_factory.getbasetemp() / "example_build"
    if not (out / "KoBBQ-example" / "manifest.json").exists():
        assert main(["build", "--out", str(out)]) == 0
    return out / "KoBBQ-example"


@pytest.fixture(scope="session")
def previous_release(tmp_path_factory) -> Path:
    """The embedded example's release as `kobbq build --templates EXAMPLE --test-split seeded` writes it, made
    with the build's pure steps (no Prefect; the Great Expectations suite is skipped): each example copies
    it into its workspace as the release a command must leave alone. Defined here, once: a session fixture each
    fuzzing module imported was a fixture of that module, built again for each (about 0.5 s of CPU a build)."""
    from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
    from core.profile import load_profile
    from tasks.audit.report import write_release_folder
    from tasks.release.assemble import expand_release
    from tasks.release.inputs import BuildInputs
    from tasks.templates.validate import load_checked

    profile = load_profile("ko")
    inputs = BuildInputs(profile, EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, profile.release.seed,
                         test_split_asked="seeded")
    loaded, findings = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, profile)
    release = expand_release(loaded.templates, profile, inputs.test_split.seed, split=inputs.test_split)
    folder = tmp_path_factory.mktemp("fuzz-previous") / profile.release.name
    folder.mkdir()
    write_release_folder(folder, inputs, loaded, findings, release, decisions=[], validate=False)
    return folder


@pytest.fixture(scope="session")
def previous_prepared(previous_release, tmp_path_factory) -> Path:
    """The previous release prepared for prompt 1 (`kobbq eval prepare`): the requests a run or a replay answers."""
    folder = tmp_path_factory.mktemp("fuzz-prepared") / "prepared"
    from fuzzing import run_in_process

    assert run_in_process(["eval", "prepare", "--release", str(previous_release), "--prompt-ids", "1", "--out",
                           str(folder)], folder.parent).code == 0
    return folder


@pytest.fixture
def offline_datasets(monkeypatch, tmp_path):
    """``datasets.load_dataset(folder, config, split)`` offline (as it must work without the Hub), its cache
    under tmp_path."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return lambda folder, config, split: datasets.load_dataset(str(folder), config, split=split,
                                                               cache_dir=str(tmp_path / "cache"))


@pytest.fixture
def closed_port() -> Iterator[Callable[[], int]]:
    """Ports where nothing listens, held until the test ends: bound and never listening, so a connection is refused
    and no other process can start listening there meanwhile (a port that was only free when looked at can be)."""
    held: list[socket.socket] = []

    def port() -> int:
        held.append(socket.socket())
        held[-1].bind(("127.0.0.1", 0))
        return held[-1].getsockname()[1]

    yield port
    for sock in held:
        sock.close()
