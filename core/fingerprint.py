"""Fingerprints: one recipe for "is this still up to date?", used by every stage. A stage's fingerprint hashes exactly
what it reads (``tasks.pipeline.plan.stage_parts``): inputs, rendered templates, earlier stages' fingerprints, its
settings and its code with every project module it imports (``code_hash``), hashed from the files on disk so that
``kobbq status`` in another process computes the value the build did."""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path

import core
from core.paths import PROJECT_ROOT

CODE_PACKAGES = ("core", "tasks", "flows", "kobbq")


# A file is read once per command: its digest is kept by what identifies its contents (path, size, times, inode;
# any write changes the change time), and the bytes of a small file, once hashed, wait for the one reader that
# parses it next (``core.text_files.read_bytes`` takes them: a template file is hashed for the fingerprint, parsed,
# and hashed again for the release's facts, from one read).
KEEP_BYTES = 64 << 20  # at most this much kept for a reader at once
_digests: dict[tuple[str, int, int, int, int], str] = {}
_kept: dict[tuple[str, int, int, int, int], bytes] = {}


def _identity(path: Path) -> tuple[str, int, int, int, int]:
    found = path.stat()
    return str(path.resolve()), found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino


def sha256_file(path: Path, keep: bool = False) -> str:
    """The file's sha256; with ``keep`` (an input a stage will parse) its bytes wait for ``take_kept``."""
    key = _identity(path)
    if key in _digests:
        return _digests[key]
    if keep and key[1] <= KEEP_BYTES - sum(map(len, _kept.values())):
        data = path.read_bytes()
        _digests[key] = digest = hashlib.sha256(data).hexdigest()
        if _identity(path) == key:  # not written while it was read
            _kept[key] = data
        return digest
    with path.open("rb") as handle:
        _digests[key] = digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return digest


def take_kept(path: Path) -> bytes | None:
    """The bytes of ``path`` as hashed in this process, when they are still its contents (once: then forgotten)."""
    return _kept.pop(_identity(path), None)


def module_path(module: str) -> Path | None:
    """The file of a project module (``tasks.survey.rules``), None for anything else."""
    if module.split(".")[0] not in CODE_PACKAGES:
        return None
    base = PROJECT_ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


# ``from a.b import c, d`` (one line, or in parentheses over several) and ``import a.b, c``, at any indentation.
_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w., \t]+)", re.MULTILINE)


@cache
def _imported(module: str) -> tuple[str, ...]:
    """The project modules ``module`` imports (any level, in any function), with the packages on the way: read
    from its import lines (a scan, not a parse: every command that checks fingerprints pays for it)."""
    path = module_path(module)
    if path is None:
        return ()
    text = path.read_text(encoding="utf-8")
    names = [name.strip() for match in _IMPORT.finditer(text) for name in match.group(1).split(",")]
    for source, imported in _FROM.findall(text):
        names += [source] + [f"{source}.{name.split(' as ')[0].strip()}" for name in imported.strip("()").split(",")
                             if name.strip()]
    found = {".".join(name.split()[0].split(".")[:i]) for name in names if name.split()
             for i in range(1, len(name.split()[0].split(".")) + 1)}
    return tuple(sorted(name for name in found if name != module and module_path(name) is not None))


@cache
def code_hash(roots: tuple[str, ...]) -> str:
    """Hash of the code that ``roots`` (modules) run: their files and every project file they import, directly or
    not. Changed code there invalidates what they made; code they never import does not."""
    seen: set[str] = set()
    todo = [root for root in roots if module_path(root) is not None]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += _imported(module)
    digest = hashlib.sha256()
    for module in sorted(seen):
        path = module_path(module)
        assert path is not None
        digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def files_fingerprint(files: dict[str, Path | None], extra: str = "") -> str:
    """Hash of every input file's contents (a folder: its files; a missing one counts as missing) and ``extra``."""
    digest = hashlib.sha256(extra.encode())
    for role, path in sorted(files.items()):
        digest.update(f"|{role}=".encode())
        digest.update(content_hash(path).encode())
    return digest.hexdigest()


def content_hash(path: Path | None) -> str:
    """The sha256 of a file, of a folder's files (names and contents), or ``<missing>`` / ``<not a file>``."""
    if path is None or not path.exists():
        return "<missing>"
    if path.is_dir():
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{child.relative_to(path).as_posix()}:{sha256_file(child)};".encode())
        return digest.hexdigest()
    if path.is_file():
        return sha256_file(path, keep=True)
    return "<not a file>"  # a device or a pipe (/dev/zero never ends): not hashed; the stage that reads it refuses it


def settings_text(values: dict[str, object]) -> str:
    """Settings as the stable text a fingerprint hashes (fractions, paths and the like by their text)."""
    return json.dumps(values, sort_keys=True, ensure_ascii=False, default=str)


def code_fingerprint(code: tuple[str, ...] = CODE_PACKAGES) -> str:
    """The project's version and the code of ``code`` (module names: what they run)."""
    return hashlib.sha256(f"version={core.__version__}|code={code_hash(tuple(code))}".encode()).hexdigest()
