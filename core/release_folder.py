"""Where one release lives in a build folder, in one place.

``<out>/<name>`` is the release, ``<out>/<name>.work`` the stages' work and ``<out>/<name>.pipeline`` their
recorded states; the name is the one given (``--name``, a pipeline's ``name``) or the profile's release
name. ``current_manifest`` is the one "is the release current" check: it reads ``manifest.json`` once and
returns it, so an up-to-date build reports its figures from the same read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.fingerprint import sha256_file
from core.profile import Profile

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ReleaseFolder:
    out: Path  # the build folder
    name: str  # the release folder's name

    @classmethod
    def of(cls, out: Path, name: str | None, profile: Profile) -> ReleaseFolder:
        """The release folder in ``out``: ``name`` when given, else the profile's release name."""
        return cls(Path(out), name or profile.release.name)

    @property
    def path(self) -> Path:
        return self.out / self.name

    @property
    def work(self) -> Path:
        """The stages' own files (workbooks, decisions, reports), beside the release."""
        return self.out / f"{self.name}.work"

    @property
    def states(self) -> Path:
        """One JSON file per pipeline stage: its status, fingerprint and outputs (``core.pipeline_file``)."""
        return self.out / f"{self.name}.pipeline"

    def manifest(self) -> dict | None:
        """The published release's ``manifest.json``; None when there is none."""
        path = self.path / MANIFEST
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def current_manifest(self, fingerprint: str) -> dict | None:
        """The manifest when the folder holds the release built from exactly these inputs (same fingerprint) and
        its files are intact; None when it must be built."""
        manifest = self.manifest()
        if manifest is None or manifest.get("build_fingerprint") != fingerprint:
            return None
        intact = all((self.path / name).exists() and sha256_file(self.path / name) == digest
                     for name, digest in manifest.get("outputs", {}).items() if name != MANIFEST)
        return manifest if intact else None
