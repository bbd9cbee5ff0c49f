"""A release folder as this project writes it: where it lives, its files' names, its manifest (one reader, one
writer), the marker that says the project wrote it, and whether its files are still the ones the manifest records.

``ReleaseFolder`` is the one place for a release's paths: ``<out>/<name>`` is the release, ``<out>/<name>.work``
the stages' work and ``<out>/<name>.pipeline`` their recorded states (one folder per pipeline in each); the name
is the one given (``--name``, a pipeline's ``name``) or the profile's release name. ``read_manifest`` is the one
reader of a manifest (read once per process unless the file changes) and ``write_manifest`` the one writer;
``release_problem`` is the one "is the release as it was built" check (``kobbq status``, the release stage,
``publish``, the evaluation).

A build replaces ``<out>/<name>`` only when that folder is a release this project wrote (``check_replaceable``):
a folder a user keeps there (a clone, their own files) is refused before anything is written, so a
mistyped ``--out`` or ``--name`` can never delete it; files a user adds inside a release (``user_entries``) are
carried over to the new release. Releases built before the marker existed are recognised by the manifest keys
every build of this project has written (``LEGACY_KEYS``). No pandas here: a command checks this before anything
heavy is imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.atomic import write_text
from core.errors import UserError
from core.fingerprint import sha256_file
from core.profile import Profile
from core.text_files import read_json

# The release's own files, by the name every command uses.
MANIFEST = "manifest.json"
DECISIONS = "decisions.csv"
AUDIT = "audit.html"
TABLE1_CSV = "table1.csv"
VALIDATION = "validation.json"
CARD = "README.md"  # the dataset card
DATA_DOCS = "data_docs"  # Great Expectations' rendered pages: run times in them, so not in the manifest

WRITTEN_BY = "kobbq-builder"  # the manifest's "written_by": the marker of a release this project wrote
LEGACY_KEYS = frozenset({"release", "profile", "project_version", "build_fingerprint", "outputs"})
STAGING_PREFIX = ".staging-"  # <out>/.staging-<name>-<pid>: a release being written (tasks.release.publish)
RETIRED_PREFIX = ".retired-"  # <out>/.retired-<name>-<pid>: the previous release during the two renames
RESERVED_PREFIXES = (".",)  # hidden names: the staging and retired folders of a publication start with "."
MAX_NAME_BYTES = 200  # a release name's length in UTF-8 bytes: room for its lock, staging and .work names (255)

_read: dict[Path, tuple[tuple[int, int], dict[str, object]]] = {}  # manifest path -> (its stat, what it held)


def read_manifest(folder: Path) -> dict[str, object] | None:
    """The folder's manifest; None when it has none. A manifest that is not a JSON object (truncated, edited)
    is a UserError at its line and column. Read once per process while the file is unchanged."""
    path = Path(folder) / MANIFEST
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    key, seen = path.resolve(), (stat.st_mtime_ns, stat.st_size)
    if key in _read and _read[key][0] == seen:
        return _read[key][1]
    manifest = read_json(path, "manifest")
    if not isinstance(manifest, dict):
        raise UserError("not a release manifest (expected a JSON object)", path)
    _read[key] = (seen, manifest)
    return manifest


def require_manifest(folder: Path) -> dict[str, object]:
    """The release's manifest; a missing or unreadable one is a UserError naming it."""
    manifest = read_manifest(folder)
    if manifest is None:
        raise UserError(f"no {MANIFEST} here; expected a release folder written by `kobbq build`", folder)
    return manifest


def write_manifest(folder: Path, manifest: dict[str, object]) -> None:
    """The one writer of a manifest (sorted keys, two-space indent: the bytes every build writes)."""
    write_text(Path(folder) / MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def is_own_release(manifest: dict[str, object]) -> bool:
    """Written by this project: the marker, or (a release built before the marker) every key it always wrote."""
    return manifest.get("written_by") == WRITTEN_BY or LEGACY_KEYS <= manifest.keys()


def check_release_name(name: str) -> str:
    """A release name is one plain folder name: never ``.``, ``..``, a path, a hidden name, a control character
    (a newline would split every line that names it) or a name too long for the files beside it, so the release
    is written exactly at ``<out>/<name>`` and nowhere else."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(RESERVED_PREFIXES) \
            or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UserError(f"release name {name!r} is not a plain folder name (no '/', '.', '..', leading '.' or "
                        "control character); give a name such as KoBBQ, and --out for the folder it goes in")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise UserError(f"release name of {len(name.encode())} bytes: at most {MAX_NAME_BYTES} (the files beside the "
                        "release add to it, and a file name has at most 255); give a shorter --name")
    return name


def check_replaceable(target: Path) -> None:
    """``target`` may be (re)written by a build: absent, an empty folder, or a release this project wrote.
    Anything else is refused in one line, before any work starts."""
    target = Path(target)
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink():
        raise UserError(f"is a symbolic link (to {target.resolve()}); a build replaces a folder, never a link: give "
                        "--out the folder it points to, or remove the link", target)
    if not target.is_dir():
        raise UserError("is a file, not a release folder, and a build would replace it; move it away, or choose "
                        "another --out or --name", target)
    if not any(target.iterdir()):
        return
    try:
        manifest = read_manifest(target)
    except UserError as error:
        raise UserError(f"{error.message}: this folder cannot be recognised as a release written by kobbq-builder, "
                        "so it is not replaced; delete the folder (or move it away) to rebuild it", error.where) from None
    if manifest is None:
        raise UserError(f"holds files but no {MANIFEST}, so it is not a release written by kobbq-builder, and a build "
                        "would replace it; move it away, or choose another --out or --name", target)
    if not is_own_release(manifest):
        raise UserError(f"its {MANIFEST} was not written by kobbq-builder, and a build would replace the folder; "
                        "move it away, or choose another --out or --name", target)


def listed_files(manifest: dict[str, object]) -> set[str]:
    """The release's files as its manifest lists them (relative paths), the manifest itself included."""
    outputs = manifest.get("outputs", {})
    return {MANIFEST, *(outputs if isinstance(outputs, dict) else ())}


def changed_files(folder: Path, manifest: dict[str, object]) -> list[str]:
    """The release's files (as its manifest lists them) that are missing or differ from what the build wrote."""
    outputs = manifest.get("outputs", {})
    if not isinstance(outputs, dict):
        return [MANIFEST]
    return [name for name, digest in sorted(outputs.items())
            if name != MANIFEST and not _intact(Path(folder) / name, str(digest))]


def _intact(path: Path, digest: str) -> bool:
    return path.is_file() and sha256_file(path) == digest


def user_entries(folder: Path, manifest: dict[str, object]) -> list[str]:
    """What a user added inside a release folder (a ``.git``, notes): every file or folder the release does not
    list, as paths relative to it, a folder whole when nothing of the release is in it. A rebuild carries them
    over to the new release (``tasks.release.publish``); they never count as a change to the release."""
    listed = listed_files(manifest)
    holding = {parent.as_posix() for name in listed for parent in Path(name).parents}  # folders with release files

    def walk(relative: Path) -> list[str]:
        found = []
        for entry in sorted((folder / relative).iterdir()):
            name = (relative / entry.name).as_posix()
            if name in listed or (entry.name == DATA_DOCS and entry.is_dir()):  # the release's, or its twin's
                continue
            if entry.is_dir() and not entry.is_symlink() and name in holding:
                found += walk(relative / entry.name)
            else:
                found.append(name)
        return found

    return walk(Path("."))


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
        """The stages' own files (workbooks, decisions, reports), beside the release: one folder per pipeline."""
        return self.out / f"{self.name}.work"

    @property
    def states(self) -> Path:
        """The stages' recorded states (``core.pipeline_file``): one folder per pipeline."""
        return self.out / f"{self.name}.pipeline"


def release_problem(target: Path, fingerprint: str | None = None) -> str | None:
    """What is wrong with a published release, in one line; None when it is there and every file is as its
    manifest records. With ``fingerprint`` (what the caller built it from), a release built from something else
    since is a problem too."""
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
    if fingerprint is not None and manifest.get("build_fingerprint") != fingerprint:
        return (f"{target} was built by another build since (another pipeline, or a build from a template file, "
                "writing the same release); `kobbq build` builds it again from these inputs")
    changed = changed_files(target, manifest)
    if changed:
        return (f"{len(changed)} file(s) of {target} differ from its manifest ({', '.join(changed[:3])}); "
                "`kobbq build` builds it again")
    return None
