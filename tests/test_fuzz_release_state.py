"""Fuzzing: what earlier runs left on disk, damaged: a release's manifest.json (read by `kobbq build`'s
up-to-date check, `eval prepare`, `why` and `publish --dry-run`) and a pipeline's stage-state files
(`<out>/<name>.pipeline/<pipeline>/<stage>.json`, read by `kobbq status` and `kobbq build --pipeline`, with and without
--force). The promises are tests/fuzzing.py's; the damaged release is the previous release a command must leave
as it is (or replace by a complete one)."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import strategies as st

from core.paths import EXAMPLE_TEMPLATES
from core.pipeline_file import DONE, StageState, load_pipeline
from tasks.pipeline.stages import STAGES
from core.release_folder import ReleaseFolder
from fuzzing import (EXAMPLE_BUILD, FUZZ_PROFILES, STATUS_RECORD, check_command, fuzz, malformed_json, in_child,
                     workspace, write)
from test_fuzz_pipeline import PIPELINE


def check_manifest(data: bytes, release: Path, runner=None) -> None:
    run = {"runner": runner} if runner else {}
    with workspace(release) as root:
        write(root / "build" / "KoBBQ" / "manifest.json", data)
        kept = {"release": "build/KoBBQ", **run}
        check_command(["build", "--templates", str(EXAMPLE_TEMPLATES), *EXAMPLE_BUILD, "--quiet"], root,
                      outputs=["build"], **kept)
        if runner is None:
            check_command(["eval", "prepare", "--release", "build/KoBBQ", "--out", "prepared", "--prompt-ids", "1"],
                          root, outputs=["prepared"], **kept)
            check_command(["why", "age-001", "--release", "build/KoBBQ"], root, outputs=[], **kept)
            check_command(["publish", "--release", "build/KoBBQ", "--to-hub", "someone/kobbq", "--dry-run"], root,
                          outputs=[], **kept)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_manifest(profile, previous_release):
    manifest = (previous_release / "manifest.json").read_bytes()
    fuzz(profile, malformed_json(manifest), lambda data: check_manifest(data, previous_release), fast=5, long=100)


@pytest.mark.slow
@pytest.mark.subprocess
def test_malformed_manifest_built_to_the_end(previous_release, prefect_api_url):
    manifest, child = (previous_release / "manifest.json").read_bytes(), in_child(prefect_api_url)
    fuzz("long", malformed_json(manifest), lambda data: check_manifest(data, previous_release, child), long=5)


# --- stage-state files ----------------------------------------------------------------------------------

def recorded_states() -> dict[str, bytes]:
    """Every stage done, as a pipeline run records it (the fast profile cannot run the pipeline to get them)."""
    return {stage: (json.dumps(asdict(StageState(stage, DONE, "0" * 64, "done", {"rows": 12},
                                                 {"decisions": f"KoBBQ-example.work/{stage}.csv"},
                                                 "2026-11-26T12:00:00+00:00", {"decisions": "0" * 64})),
                               indent=2) + "\n").encode("utf-8")
            for stage in STAGES}


def states_folder(root: Path) -> Path:
    """Where the pipeline ``in/pipeline.toml`` keeps its stage states in ``build`` (a folder of its own)."""
    return ReleaseFolder(root / "build", "KoBBQ-example").states / load_pipeline(root / "in" / "pipeline.toml").key


def malformed_states(states: dict[str, bytes]) -> st.SearchStrategy[tuple[str, bytes]]:
    """(stage, its state file damaged)."""
    return st.sampled_from(sorted(states)).flatmap(lambda stage: malformed_json(states[stage]).map(
        lambda data: (stage, data)))


def check_state(case: tuple[str, bytes], release: Path, build: Path | None = None, runner=None) -> None:
    """``build``: a build folder a pipeline run left (copied whole); else the states above beside ``release``."""
    stage, data = case
    run = {"runner": runner} if runner else {}
    with workspace(None if build else release) as root:
        write(root / "in" / "pipeline.toml", PIPELINE)
        states = states_folder(root)
        if build:
            shutil.copytree(build, root / "build")
            (own,) = (root / "build" / "KoBBQ-example.pipeline").iterdir()  # the example pipeline's, taken as this one's
            own.rename(states)
        else:
            for name, recorded in recorded_states().items():
                write(states / f"{name}.json", recorded)
        write(states / f"{stage}.json", data)
        kept = {"release": "build/KoBBQ-example" if build else "build/KoBBQ", **run}
        record = "build/.KoBBQ-example.verified.json" if build else STATUS_RECORD  # beside the release it checked
        check_command(["status", "--pipeline", "in/pipeline.toml"], root, outputs=[record], **kept)
        check_command(["build", "--pipeline", "in/pipeline.toml", "--quiet"], root, outputs=["build"], **kept)
        check_command(["build", "--pipeline", "in/pipeline.toml", "--quiet", "--force"], root, outputs=["build"], **kept)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_stage_state(profile, previous_release):
    fuzz(profile, malformed_states(recorded_states()), lambda case: check_state(case, previous_release),
         fast=5, long=100)


@pytest.mark.slow
@pytest.mark.subprocess
def test_malformed_stage_state_of_a_real_run(example_release, prefect_api_url):
    """The example pipeline's own build folder (every stage done), one state file damaged, in child processes."""
    build = example_release.parent
    (own,) = (build / "KoBBQ-example.pipeline").iterdir()
    states = {stage: (own / f"{stage}.json").read_bytes() for stage in STAGES if (own / f"{stage}.json").exists()}
    child = in_child(prefect_api_url)
    fuzz("long", malformed_states(states), lambda case: check_state(case, example_release, build, child), long=2)
