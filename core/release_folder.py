"""A release folder as this project writes it: its paths, its files' names, its manifest (one cached reader, one
writer), the marker that this project wrote it, and whether its files are still the ones the manifest records.

The files as last verified are recorded beside the release (``<out>/.<name>.verified.json``) so that ``kobbq status``
need not hash 95 MB each time; a build replaces only a release this project wrote (``check_replaceable``). No pandas
here: a command checks this before anything heavy. Design: docs/developing.md, "The release checks' child"."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from core.atomic import write_text
from core.domains import check_release_name
from core.errors import UserError
from core.fingerprint import sha256_file
from core.profile import Profile
from core.text_files import read_json

# The release's own files, by the name every command uses: product code never spells one (tests/test_file_names.py).
MANIFEST = "manifest.json"
DECISIONS = "decisions.csv"
DECISIONS_PARQUET = "decisions.parquet"
AUDIT = "audit.html"
CARD = "README.md"  # the dataset card
TABLE1_CSV = "table1.csv"
TABLE1_MD = "table1.md"
CORRECTIONS_APPLIED = "corrections_applied.csv"
NORMALISATIONS = "normalisations.csv"
INPUT_WARNINGS = "input_warnings.txt"
DATA_DOCS = "data_docs"  # Great Expectations' pages, written by older builds: dropped on a rebuild, not kept

WRITTEN_BY = "kobbq-builder"  # the manifest's "written_by": the marker of a release this project wrote
LEGACY_KEYS = frozenset({"release", "profile", "project_version", "build_fingerprint", "outputs"})
STAGING_PREFIX = ".staging-"  # <out>/.staging-<name>-<pid>: a release being written (tasks.release.publish)
RETIRED_PREFIX = ".retired-"  # <out>/.retired-<name>-<pid>: the previous release during the two renames
VERIFIED_SUFFIX = ".verified.json"  # <out>/.<name>.verified.json: the release's files as last verified

_read: dict[Path, tuple[tuple[int, int], dict[str, object]]] = {}  # manifest path -> (its stat, what it held)


def read_manifest(folder: Path) -> dict[str, object] | None:
    """The folder's manifest (None when it has none; not a JSON object: a UserError), read once while unchanged."""
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
    manifest = read_manifest(folder)
    if manifest is None:
        raise UserError(f"no {MANIFEST} here; expected a release folder written by `kobbq build`", folder)
    return manifest


def write_manifest(folder: Path, manifest: dict[str, object]) -> None:
    """The one writer of a manifest (sorted keys, two-space indent: the bytes every build writes)."""
    write_text(Path(folder) / MANIFEST, manifest_text(manifest))


def manifest_text(manifest: dict[str, object]) -> str:
    return json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def manifest_sha256(manifest: dict[str, object]) -> str:
    """Taken from what was parsed, not from the file again, so that it names the digests being compared."""
    return hashlib.sha256(manifest_text(manifest).encode("utf-8")).hexdigest()


def is_own_release(manifest: dict[str, object]) -> bool:
    """Written by this project: the marker, or (a release built before the marker) every key it always wrote."""
    return manifest.get("written_by") == WRITTEN_BY or LEGACY_KEYS <= manifest.keys()


def check_replaceable(target: Path, profile: str | None = None) -> None:
    """Refuse, before any work starts, a ``target`` that is not absent, an empty folder, or a release this project wrote
    of the same name and (when given) ``profile``: a mistyped --out or --name never deletes a user's folder."""
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
    held = (str(manifest.get("release", target.name)), str(manifest.get("profile", profile)))
    if held != (target.name, held[1] if profile is None else profile):  # another release is never replaced in silence
        raise UserError(f"holds the release {held[0]!r} of profile {held[1]!r}, and this build writes {target.name!r} "
                        f"of profile {profile or held[1]!r}: give --out another folder, or delete this one to "
                        "replace it", target)


def listed_files(manifest: dict[str, object]) -> set[str]:
    """The release's files as its manifest lists them (relative paths), the manifest itself included."""
    outputs = manifest.get("outputs", {})
    return {MANIFEST, *(outputs if isinstance(outputs, dict) else ())}


def changed_files(folder: Path, manifest: dict[str, object]) -> list[str]:
    """The release's files that are missing or differ from what the build wrote: every one hashed."""
    return _check_files(Path(folder), manifest, {})[0]


Entry = list[object]  # a verified file: [size, mtime_ns, ctime_ns, sha256]


def _check_files(folder: Path, manifest: dict[str, object], trusted: dict[str, Entry]
                 ) -> tuple[list[str], dict[str, Entry]]:
    """The files that are missing or differ, and the entry of each that is as the manifest records it; one whose
    ``trusted`` entry still matches is not read. Its stamp is taken before it is read: a change while it is hashed
    leaves other times than the ones recorded, so the next check reads it again."""
    outputs = manifest.get("outputs", {})
    if not isinstance(outputs, dict):
        return [MANIFEST], {}
    changed, verified = [], {}
    for name, digest in sorted(outputs.items()):
        if name == MANIFEST:
            continue
        stamp = _stamp(folder / name)
        entry: Entry = [*stamp, str(digest)] if stamp else []
        if stamp and (entry == trusted.get(name) or sha256_file(folder / name) == digest):
            verified[name] = entry
        else:
            changed.append(name)
    return changed, verified


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime_ns, ctime_ns) of a regular file (a link followed); None when it is missing or not a file."""
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns) if stat.S_ISREG(found.st_mode) else None


def verified_path(target: Path) -> Path:
    """``<out>/.<name>.verified.json``: beside the release, which holds exactly what its manifest lists."""
    target = Path(target)
    return target.parent / f".{target.name}{VERIFIED_SUFFIX}"


def read_verified(target: Path, manifest: dict[str, object]) -> dict[str, Entry]:
    """The recorded entries, when the record was made for this manifest (never a predecessor's); else nothing."""
    try:
        record = json.loads(verified_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or record.get("manifest_sha256") != manifest_sha256(manifest):
        return {}
    return {name: entry for name, entry in files.items() if isinstance(entry, list)}


def write_verified(target: Path, manifest: dict[str, object], verified: dict[str, Entry]) -> None:
    """Record ``verified`` beside the release; only a shortcut, so a read-only folder goes without it."""
    record = {"manifest_sha256": manifest_sha256(manifest), "files": verified}
    with suppress(OSError):
        write_text(verified_path(target), json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def record_published(target: Path, manifest: dict[str, object]) -> None:
    """Record a release just published as verified with the digests its in-memory ``manifest`` has just taken, reading
    nothing again; a file changed after the manifest was written is left out."""
    outputs = manifest.get("outputs")
    if not isinstance(outputs, dict):
        return
    written = os.stat(target / MANIFEST).st_mtime_ns
    stamps = {name: _stamp(target / name) for name in outputs if name != MANIFEST}
    write_verified(target, manifest, {name: [*stamp, str(outputs[name])] for name, stamp in stamps.items()
                                      if stamp is not None and stamp[1] <= written})


def verify_files(target: Path, manifest: dict[str, object], trust_record: bool) -> list[str]:
    """``changed_files``, then the record rewritten when it changed; with ``trust_record``, the record trusted."""
    recorded = read_verified(target, manifest)
    changed, verified = _check_files(target, manifest, recorded if trust_record else {})
    if verified != recorded:
        write_verified(target, manifest, verified)
    return changed


def user_entries(folder: Path, manifest: dict[str, object]) -> list[str]:
    """What a user added inside a release folder (a ``.git``, notes), relative to it, a folder whole when nothing of the
    release is in it: a rebuild carries them over, and they never count as a change to the release."""
    listed = listed_files(manifest)
    holding = {parent.as_posix() for name in listed for parent in Path(name).parents}  # folders with release files

    def walk(relative: Path) -> list[str]:
        found = []
        for entry in sorted((folder / relative).iterdir()):
            name = (relative / entry.name).as_posix()
            if name in listed or (entry.name == DATA_DOCS and entry.is_dir()):  # the release's, or an older build's
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


def release_problem(target: Path, fingerprint: str | None = None, trust_record: bool = False) -> str | None:
    """What is wrong with a published release, in one line (None: nothing); with ``fingerprint``, a release built from
    something else since is a problem too."""
    target = Path(target)
    if not target.is_dir():
        if retired := sorted(target.parent.glob(f"{RETIRED_PREFIX}{target.name}-*")):
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
    if changed := verify_files(target, manifest, trust_record):
        return (f"{len(changed)} file(s) of {target} differ from its manifest ({', '.join(changed[:3])}); "
                "`kobbq build` builds it again")
    return None
