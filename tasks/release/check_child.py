"""The release checks' child processes, started ahead of their job.

Importing Great Expectations takes about 4 s, the longest single thing a build waits for. A build therefore
starts the checks' child first (``warm_up``, from ``kobbq build`` before its own imports; a deployment run's
release stage starts it when it writes the release): the child imports the library while the build reads its
inputs, starts its flow run and stages the Parquet files, then reads its job
(``tasks.release.checks.ValidationChild``) from one line of stdin. This module imports nothing heavy, so that
the child starts before the build's own imports.

A spare no build takes ends with the command (``_end_spares``, at exit; a signal ends it as any registered
child), or by itself when its stdin closes (its parent was killed).
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import tempfile

from core import interrupt

WAIT_FOR_JOB = "--wait-for-job"  # the child's one argument: its job comes on stdin


class CheckChild(subprocess.Popen):
    """A checks' child, started with ``-P`` so that the working folder is not on its ``sys.path`` (a folder
    holding its own ``tasks`` package, or an Invoke ``tasks.py``, would shadow the project's): its job goes to its stdin, its report line comes on its stdout, and its stderr goes to a
    temporary file, not a pipe, so that it never waits for the build to read it (the build reads the report
    line while the child goes on writing its Data Docs)."""

    def __init__(self) -> None:
        self._errors = tempfile.TemporaryFile()
        super().__init__([sys.executable, "-P", "-m", "tasks.release.checks", WAIT_FOR_JOB], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=self._errors, text=True)

    def stderr_text(self) -> str:
        """What the child wrote to its stderr (read once it has ended)."""
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", "replace")


_spares: list[CheckChild] = []


def start_child() -> CheckChild:
    """A new child, importing its library, then waiting for its job."""
    process = CheckChild()
    interrupt.register_child(process.pid, "release validation")
    return process


def warm_up(count: int = 1) -> None:
    """Have ``count`` children waiting for a job (a release's checks, and each twin's)."""
    _spares[:] = [spare for spare in _spares if spare.poll() is None]
    while len(_spares) < count:
        _spares.append(start_child())


def take_child() -> CheckChild:
    """A waiting spare, else a new child."""
    while _spares:
        spare = _spares.pop(0)
        if spare.poll() is None:
            return spare
    return start_child()


def _end_spares() -> None:
    """The spares no build took: ended with the command, so nothing is left running."""
    interrupt.end_processes([spare.pid for spare in _spares if spare.poll() is None])
    for spare in _spares:
        spare.wait()
        interrupt.unregister_child(spare.pid)
    _spares.clear()


atexit.register(_end_spares)
