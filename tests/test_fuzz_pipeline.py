"""Fuzzing: malformed pipeline files given to `kobbq build --pipeline` and `kobbq status --pipeline`. The
promises are tests/fuzzing.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.paths import EXAMPLE_PIPELINE
from fuzzing import FUZZ_PROFILES, STATUS_RECORD, check_command, fuzz, malformed_toml, in_child, workspace, write


def example_pipeline() -> bytes:
    """The example's pipeline file, its paths made absolute (the file is written elsewhere; its inputs stay
    where they are, read only)."""
    folder = EXAMPLE_PIPELINE.parent
    lines, in_table = [], False
    for line in EXAMPLE_PIPELINE.read_text(encoding="utf-8").splitlines():
        in_table = in_table or line.startswith("[")
        if in_table:
            line = re.sub(r'"([^"]+)"', lambda m: json.dumps(str(folder / m.group(1))), line)
        lines.append(line)
    return ("\n".join(lines) + "\n").encode("utf-8")


PIPELINE = example_pipeline()


def check_pipeline(data: bytes, release: Path, runner=None) -> None:
    run = {"runner": runner} if runner else {}
    with workspace(release) as root:
        write(root / "in" / "pipeline.toml", data)
        check_command(["status", "--pipeline", "in/pipeline.toml"], root, outputs=[STATUS_RECORD],
                      release="build/KoBBQ", **run)
        check_command(["build", "--pipeline", "in/pipeline.toml", "--quiet"], root, outputs=["build"],
                      release="build/KoBBQ", **run)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_pipeline_file(profile, previous_release):
    fuzz(profile, malformed_toml(PIPELINE), lambda data: check_pipeline(data, previous_release), fast=6, long=150)


@pytest.mark.slow
@pytest.mark.subprocess
def test_malformed_pipeline_file_run_to_the_end(previous_release, prefect_api_url):
    """Child processes, Prefect included: a damaged file that still loads runs the example's stages."""
    child = in_child(prefect_api_url)
    fuzz("long", malformed_toml(PIPELINE, max_damages=1),
         lambda data: check_pipeline(data, previous_release, child), long=2)
