"""Atomic file writes: a reader, or a crash, never sees half a file under its real name."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core.errors import UserError, os_errno


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds it replaces ``path``, else it is removed. An OS
    error (a full disk) naming the temporary file, or no file (pandas' and pyarrow's writers name none), is raised
    naming ``path``, since the temporary file is gone by then."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as exc:
        if str(exc.filename2) == str(temporary):  # a copy into it (its source named first)
            exc.filename2 = str(path)
            raise
        if exc.filename is not None and str(exc.filename) != str(temporary):
            raise
        raise OSError(os_errno(exc), exc.strerror or str(exc), str(path)) from exc
    finally:
        temporary.unlink(missing_ok=True)


def write_with(path: Path, write: Callable[[Path], object]) -> Path:
    """Let ``write`` fill a temporary file, then move it into place."""
    with replacing(path) as temporary:
        write(temporary)
    return Path(path)


def write_text(path: Path, text: str) -> Path:
    return write_with(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    return write_with(path, lambda temporary: temporary.write_bytes(data))


def check_not_a_file(folder: Path) -> Path:
    """An output folder's path must not name a file (which the first write would fail on, naming another cause)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError("is a file, not a folder; give a folder as --out (it is created if missing)", folder)
    return folder


def check_writable(folder: Path, create: bool = True) -> None:
    """Before any work starts, a folder that will be written can be (created if missing), so a read-only or foreign
    folder fails in one line. ``create=False`` leaves no folder behind (a refused command must not leave one): the
    nearest existing folder must then be writable."""
    folder = check_not_a_file(folder)
    probe = folder / f".kobbq-write-check-{os.getpid()}"
    try:
        if not create:
            existing = next(p for p in [folder, *folder.parents] if p.exists())
            if not os.access(existing, os.W_OK):
                read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
                raise OSError(errno.EROFS if read_only else errno.EACCES, os.strerror(errno.EROFS if read_only
                                                                                      else errno.EACCES))
            return
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write to this folder ({exc.strerror or exc}); choose another --out, or make it "
                        "writable", folder) from None
