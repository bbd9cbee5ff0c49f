"""Fingerprints: one recipe for "is this still up to date?", used by every stage and the release.

A fingerprint hashes the contents of a stage's input files (a folder: every file in it; a
missing file counts as missing), the settings that change its output (seed, profile), and the
project's own code. The code is hashed from the files on disk, not from loaded modules, so
``kobbq status`` in another process computes the same value as the build did.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import core

from core.paths import PROJECT_ROOT

CODE_PACKAGES = ("core", "kobbq", "tasks", "flows")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def code_hash() -> str:
    """Hash of the project's code (every module of its packages): changed code invalidates a release.

    All modules, not only the loaded ones: which modules a process has loaded depends on which
    stages ran, and the fingerprint must not.
    """
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def files_fingerprint(files: dict[str, Path | None], extra: str = "") -> str:
    """Hash of the contents of every input file (a folder: every file in it; a missing one counts as
    missing) and of ``extra``: one fingerprint for the release's up-to-date check and the pipeline's stages."""
    digest = hashlib.sha256(extra.encode())
    for role, path in sorted(files.items()):
        digest.update(f"|{role}=".encode())
        if path is None or not path.exists():
            digest.update(b"<missing>")
        elif path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                digest.update(f"{child.relative_to(path).as_posix()}:{sha256_file(child)};".encode())
        elif path.is_file():
            digest.update(sha256_file(path).encode())
        else:  # a device or a pipe (/dev/zero never ends): not hashed; the stage that reads it refuses it
            digest.update(b"<not a file>")
    return digest.hexdigest()


def fingerprint(files: dict[str, Path | None], settings: str = "") -> str:
    """The one recipe: input files' contents, the settings given, the project version and its code."""
    return files_fingerprint(files, extra=f"{settings}|version={core.__version__}|code={code_hash()}")
