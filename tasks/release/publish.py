"""Atomic publication of a release: staged beside the target, one build at a time, two renames. A crash at any
moment leaves the previous release or the new one; the next build undoes what it left (``recover``). No pandas
here: a command takes the lock and cleans up before anything heavy is imported.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core import interrupt
from core.errors import UserError, os_errno
from core.release_folder import (RETIRED_PREFIX, STAGING_PREFIX, check_release_name, check_replaceable, read_manifest,
                                 record_published, user_entries)


def _stem(target: Path) -> str:
    """``target``'s name, or for a name near the file system's 255 bytes a hash of it (an output folder's)."""
    name = target.name.encode("utf-8")
    return target.name if len(name) <= 200 else hashlib.sha256(name).hexdigest()[:16]


def staging_folder(target: Path) -> Path:
    return target.parent / f"{STAGING_PREFIX}{_stem(target)}-{os.getpid()}"


def dead_folders(target: Path, prefix: str) -> list[Path]:
    """The ``<prefix><name>-<pid>`` folders beside ``target`` whose process is gone (a crash, SIGKILL)."""
    return [folder for folder in sorted(target.parent.glob(f"{glob.escape(prefix + _stem(target))}-*"))
            if (pid := folder.name.rsplit("-", 1)[-1]).isdigit() and interrupt.start_time(int(pid)) is None]


def recover(target: Path) -> None:
    """Undo what a crash left behind: staging folders of dead builds, a release retired but not replaced."""
    for prefix in (STAGING_PREFIX, RETIRED_PREFIX):
        for folder in dead_folders(target, prefix):
            if prefix == RETIRED_PREFIX and not target.exists():
                os.replace(folder, target)  # the crash came between the two renames of publish
                continue
            if prefix == RETIRED_PREFIX:
                carry_over(folder, target)  # the crash came before the user's own files were moved across
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def staged_release(target: Path, profile: str | None = None) -> Iterator[Path]:
    """An empty staging folder to write the release into and ``publish``; an error or a signal removes it."""
    check_release_name(target.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target):
        recover(target)
        check_replaceable(target, profile)  # also when the flow runs without the command (a deployment)
        staging = staging_folder(target)
        with removed_on_error(staging, lambda exc: release_os_error(exc, staging, target)):
            yield staging


@contextmanager
def removed_on_error(staging: Path, named: Callable[[OSError], OSError]) -> Iterator[None]:
    """Make ``staging``; an error or a signal removes it; an OSError (a full disk) is raised as ``named`` gives it."""
    staging.mkdir()
    interrupt.register_staging(staging)
    try:
        yield
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        renamed = named(exc) if isinstance(exc, OSError) else exc
        if renamed is exc:
            raise
        raise renamed from exc
    finally:
        interrupt.unregister_staging(staging)


def release_os_error(exc: OSError, staging: Path, target: Path) -> OSError:
    """The error as the user can act on it: a file of the removed staging folder (or none: pyarrow's writers name
    none) is reported as the release."""
    filename = None if exc.filename is None else str(exc.filename)
    if filename is not None and not filename.startswith(str(staging)):
        return exc
    return OSError(os_errno(exc), exc.strerror or str(exc), str(target))


_held: set[Path] = set()  # lock files this process holds: a build takes the lock before Prefect starts, the flow again


BUSY = "another build (pid {pid}) is writing this release; wait for it to finish"


@contextmanager
def build_lock(target: Path, busy: str = BUSY) -> Iterator[None]:
    """One build at a time per release folder, a second one stopped at once. Re-entrant: the command takes it before
    Prefect starts, the flow again; ``kobbq eval run`` too, with its own ``busy`` message ({pid}: the holder's)."""
    lock_path = (target.parent / f".{target.name}.lock").resolve()
    if lock_path in _held:  # taken again inside the block that holds it, which releases it
        yield
        return
    with lock_path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise UserError(busy.format(pid=handle.read().strip() or "?"), target) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        _held.add(lock_path)
        try:
            yield
        finally:
            _held.remove(lock_path)
            fcntl.flock(handle, fcntl.LOCK_UN)


def publish(staging: Path, target: Path, manifest: dict[str, object] | None = None) -> list[str]:
    """Replace ``target`` by ``staging`` with two renames (a signal waits for both; ``recover`` undoes a SIGKILL
    between them); what a user added inside is carried over and returned, refused first where the release has a file
    of its own. With ``manifest``, the new files are recorded as verified: ``kobbq status`` need not hash them."""
    added = _user_entries(target)
    conflicts = [entry for entry in added if (staging / entry).exists()]
    if conflicts:
        raise UserError(f"holds {', '.join(conflicts)}, which you added and the new release writes too; move them "
                        "away, then build again", target)
    retired = target.parent / f"{RETIRED_PREFIX}{target.name}-{os.getpid()}"
    with interrupt.critical():
        if target.exists():
            os.replace(target, retired)
        interrupt.checkpoint("publish")
        os.replace(staging, target)
        carried = carry_over(retired, target, added)
        interrupt.mark_published(target)
    if manifest is not None:
        record_published(target, manifest)
    shutil.rmtree(retired, ignore_errors=True)
    return carried


def _user_entries(release: Path) -> list[str]:
    manifest = read_manifest(release) if release.is_dir() else None
    return user_entries(release, manifest) if manifest is not None else []


def carry_over(retired: Path, target: Path, entries: list[str] | None = None) -> list[str]:
    """Move what a user added inside the previous release (``retired``; ``entries`` when known) into ``target``."""
    carried = []
    for entry in _user_entries(retired) if entries is None else entries:
        destination = target / entry
        if destination.exists():
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(retired / entry, destination)
        carried.append(entry)
    return carried
