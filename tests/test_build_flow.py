"""The build flow as a deployment runs it (files as parameters): the embedded example builds, a rebuild finds every
stage current and writes nothing, and --force rebuilds the same bytes."""

from __future__ import annotations

import json

import pytest

from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from core.fingerprint import sha256_file


@pytest.mark.flow
def test_build_flow_builds_the_example_then_skips_an_unchanged_rebuild(tmp_path, prefect_harness):
    from flows.pipeline import build

    first = build(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS, test_split="seeded")
    assert first.finished and set(first.outputs) == {"release"}  # the release stage ran
    release = tmp_path / "KoBBQ"
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    rows = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").count("\n") - 1
    assert first.test_samples == 4 * rows == manifest["test_samples"]
    assert first.samples == manifest["samples"] == sum(c["samples"] for c in manifest["categories"].values())
    stamp = {p.name: p.stat().st_mtime_ns for p in release.iterdir()}

    second = build(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS, test_split="seeded")
    assert second.finished and second.outputs == {}  # nothing ran
    assert (second.samples, second.test_samples) == (first.samples, first.test_samples)
    assert {p.name: p.stat().st_mtime_ns for p in release.iterdir()} == stamp

    forced = build(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS, test_split="seeded",
                   force=True)
    assert set(forced.outputs) == {"release"}
    for name, digest in manifest["outputs"].items():
        assert sha256_file(release / name) == digest  # same inputs, same bytes
