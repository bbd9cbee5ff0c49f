"""An up-to-date release is one whose manifest still says what a build reports of it."""

from __future__ import annotations

import json

import pytest

from core.paths import EXAMPLE_TEMPLATES
from core.release_folder import ReleaseFolder
from test_release import build_into


@pytest.mark.parametrize("edit", [lambda m: m.pop("test_samples"), lambda m: m.pop("samples"),
                                  lambda m: m.update(samples="224"), lambda m: m.update(test_samples=None)])
def test_a_manifest_without_the_counts_it_reports_is_not_current(tmp_path, ko_profile, edit):
    release = ReleaseFolder(tmp_path, "KoBBQ")
    target = release.path
    fingerprint = build_into(target, EXAMPLE_TEMPLATES, ko_profile)["build_fingerprint"]
    assert release.current_manifest(fingerprint) is not None
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    edit(manifest)
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert release.current_manifest(fingerprint) is None
