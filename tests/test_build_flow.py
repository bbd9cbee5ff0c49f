"""The build flow through Prefect: the embedded example builds, and a rebuild finds it up to date."""

from __future__ import annotations

import json

import pytest

from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from core.fingerprint import sha256_file


@pytest.mark.flow
def test_build_flow_builds_the_example_then_skips_an_unchanged_rebuild(tmp_path, prefect_harness):
    from flows.build import build_from_files

    first = build_from_files(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS,
                             test_split="seeded")
    assert not first.up_to_date
    release = tmp_path / "KoBBQ"
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    rows = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").count("\n") - 1
    assert first.test_samples == 4 * rows == manifest["test_samples"]
    assert first.samples == manifest["samples"] == sum(c["samples"] for c in manifest["categories"].values())
    stamp = {p.name: p.stat().st_mtime_ns for p in release.iterdir()}

    second = build_from_files(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS,
                              test_split="seeded")
    assert second.up_to_date
    assert {p.name: p.stat().st_mtime_ns for p in release.iterdir()} == stamp

    forced = build_from_files(templates=EXAMPLE_TEMPLATES, out=tmp_path, corrections=DEFAULT_CORRECTIONS,
                              test_split="seeded", force=True)
    assert not forced.up_to_date
    for name, digest in manifest["outputs"].items():
        assert sha256_file(release / name) == digest  # same inputs, same bytes
