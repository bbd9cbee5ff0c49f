"""The build folder made ready, once per build, before Prefect starts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from core import console, interrupt
from core.atomic import check_writable
from core.release_folder import ReleaseFolder
from tasks.release.publish import build_lock, recover


@contextmanager
def build_folder(folder: ReleaseFolder, lock: bool = True) -> Iterator[None]:
    """The build folder can be written, processes a killed build left running are ended, its staging or
    half-published folders are cleaned up (also when nothing is rebuilt); then, with ``lock``, one build at a
    time holds the release until the block ends."""
    check_writable(folder.out)
    for ended in interrupt.reap_orphans(folder.out):
        console.step(f"ended {ended}, left running by a build that was killed")
    recover(folder.path)
    if not lock:
        yield
        return
    with build_lock(folder.path):
        yield
