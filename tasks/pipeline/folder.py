"""The build folder made ready, once per build, before Prefect starts."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import console, interrupt
from core.atomic import check_writable
from core.release_folder import ReleaseFolder
from tasks.release.publish import build_lock, recover


def tidy(folder: ReleaseFolder) -> None:
    """Processes a killed build left running are ended, and its staging or half-published folders cleaned up (also
    when nothing is rebuilt). Writes nothing when there is nothing to clean up: a release on a read-only mount can be
    found up to date."""
    for ended in interrupt.reap_orphans(folder.out):
        console.step(f"ended {ended}, left running by a build that was killed")
    recover(folder.path)


@contextmanager
def build_folder(folder: ReleaseFolder) -> Iterator[None]:
    """The build folder can be written and is tidy (``tidy``); one build at a time holds the release until the
    block ends."""
    check_writable(folder.out)
    tidy(folder)
    with build_lock(folder.path):
        yield


def running_build(target: Path) -> str | None:
    """The process id of the build that holds the release's lock (``tasks.release.publish.build_lock``: the file
    ``<out>/.<name>.lock`` with its holder's id), "?" when it wrote none; None when no build holds it. Reads only."""
    try:
        with (target.parent / f".{target.name}.lock").open("r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return handle.read().strip() or "?"
    except OSError:  # no lock file: no build has run here
        return None
    return None
