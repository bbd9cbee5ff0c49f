"""A release folder as this project writes it: where it lives, its manifest, the marker that says the project
wrote it, and whether its files are still the ones the manifest records.

``ReleaseFolder`` is the one place for a release's paths: ``<out>/<name>`` is the release, ``<out>/<name>.work``
the stages' work and ``<out>/<name>.pipeline`` their recorded states; the name is the one given (``--name``, a
pipeline's ``name``) or the profile's release name. ``ReleaseFolder.current_manifest`` is the one "is the
release current" check: it reads ``manifest.json`` once and returns it, so an up-to-date build reports its
figures from the same read.

A build replaces ``<out>/<name>`` only when that folder is a release this project wrote (``check_replaceable``):
a folder a user keeps there (a clone, their own files) is refused before anything is written, so a
mistyped ``--out`` or ``--name`` can never delete it. Releases built before the marker existed are
recognised by the manifest keys every build of this project has written (``LEGACY_KEYS``).
No pandas here: a command checks this before anything heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.fingerprint import sha256_file
from core.profile import Profile
from core.text_files import read_json

MANIFEST = "manifest.json"
WRITTEN_BY = "kobbq-builder"  # the manifest's "written_by": the marker of a release this project wrote
LEGACY_KEYS = frozenset({"release", "profile", "project_version", "build_fingerprint", "outputs"})
STAGING_PREFIX = ".staging-"  # <out>/.staging-<name>-<pid>: a release being written (tasks.release.publish)
RETIRED_PREFIX = ".retired-"  # <out>/.retired-<name>-<pid>: the previous release during the two renames
RESERVED_PREFIXES = (".",)  # hidden names: the staging and retired folders of a publication start with "."


def read_manifest(folder: Path) -> dict[str, object] | None:
    """The folder's manifest; None when it has none. A manifest that is not a JSON object (truncated, edited)
    is a UserError at its line and column."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    manifest = read_json(path, "manifest")
    if not isinstance(manifest, dict):
        raise UserError("not a release manifest (expected a JSON object)", path)
    return manifest


def is_own_release(manifest: dict[str, object]) -> bool:
    """Written by this project: the marker, or (a release built before the marker) every key it always wrote."""
    return manifest.get("written_by") == WRITTEN_BY or LEGACY_KEYS <= manifest.keys()


def check_release_name(name: str) -> str:
    """A release name is one plain folder name: never ``.``, ``..``, a path or a hidden name, so the release is
    written exactly at ``<out>/<name>`` and nowhere else."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name \
            or name.startswith(RESERVED_PREFIXES):
        raise UserError(f"release name {name!r} is not a plain folder name (no '/', '.', '..' or leading '.'); "
                        "give a name such as KoBBQ, and --out for the folder it goes in")
    return name


def check_replaceable(target: Path) -> None:
    """``target`` may be (re)written by a build: absent, an empty folder, or a release this project wrote.
    Anything else is refused in one line, before any work starts."""
    target = Path(target)
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise UserError("is not a release folder written by kobbq-builder and would be replaced by this build; "
                        "move it away, or choose another --out or --name", target)
    if not any(target.iterdir()):
        return
    try:
        manifest = read_manifest(target)
    except UserError as error:
        raise UserError(f"{error.message}: this folder cannot be recognised as a release written by kobbq-builder, "
                        "so it is not replaced; delete the folder (or move it away) to rebuild it", error.where) from None
    if manifest is None or not is_own_release(manifest):
        raise UserError("is not a release folder written by kobbq-builder (its manifest.json does not say so), and "
                        "a build would replace it; move it away, or choose another --out or --name", target)


def changed_files(folder: Path, manifest: dict[str, object]) -> list[str]:
    """The release's files (as its manifest lists them) that are missing or differ from what the build wrote."""
    outputs = manifest.get("outputs", {})
    if not isinstance(outputs, dict):
        return [MANIFEST]
    return [name for name, digest in sorted(outputs.items())
            if name != MANIFEST and not _intact(Path(folder) / name, str(digest))]


def _intact(path: Path, digest: str) -> bool:
    return path.is_file() and sha256_file(path) == digest


@dataclass(frozen=True)
class ReleaseFolder:
    out: Path  # the build folder
    name: str  # the release folder's name: one plain folder name (``check_release_name``)

    @classmethod
    def of(cls, out: Path, name: str | None, profile: Profile) -> ReleaseFolder:
        """The release folder in ``out``: ``name`` when given, else the profile's release name."""
        return cls(Path(out), check_release_name(profile.release.name if name is None else name))

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

    def current_manifest(self, fingerprint: str) -> dict[str, object] | None:
        """The manifest when the folder holds the release built from exactly these inputs (same fingerprint,
        ``core.fingerprint``) and its files are intact; None when it must be built. A manifest that cannot be
        read is a UserError, not a traceback."""
        manifest = read_manifest(self.path)
        if (manifest is None or manifest.get("build_fingerprint") != fingerprint
                or not has_reported_counts(manifest) or changed_files(self.path, manifest)):
            return None
        return manifest


REPORTED_COUNTS = ("samples", "test_samples")  # what `kobbq build` prints of a release it finds up to date


def has_reported_counts(manifest: dict[str, object]) -> bool:
    """The counts an up-to-date build reports are there, as numbers. A manifest edited without them (found by the
    fuzzing suite: a KeyError traceback) makes the release not current, so it is built again."""
    return all(type(manifest.get(key)) is int for key in REPORTED_COUNTS)


def release_problem(target: Path) -> str | None:
    """What is wrong with a published release, in one line for ``kobbq status``; None when it is there and
    every file is as its manifest records."""
    target = Path(target)
    if not target.is_dir():
        retired = sorted(target.parent.glob(f"{RETIRED_PREFIX}{target.name}-*"))
        if retired:
            return (f"{target} is missing: a build was stopped while publishing it, and the previous release is in "
                    f"{retired[0]}; `kobbq build` puts it back")
        return f"{target} does not exist (removed since it was built); `kobbq build` builds it again"
    try:
        manifest = read_manifest(target)
    except UserError as error:
        return f"{error.render()}; `kobbq build` cannot replace it: delete {target} to rebuild it"
    if manifest is None:
        return f"{target} has no {MANIFEST}; `kobbq build --force` builds it again"
    changed = changed_files(target, manifest)
    if changed:
        return (f"{len(changed)} file(s) of {target} differ from its manifest ({', '.join(changed[:3])}); "
                "`kobbq build` builds it again")
    return None
