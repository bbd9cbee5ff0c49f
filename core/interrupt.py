"""Ctrl-C and SIGTERM stop a command at once (exit 130 or 143), and a SIGKILLed one is cleaned up by the next.

What a build leaves running or half-written (child processes, its staging folder) is registered here; ``critical()``
defers a signal past a publication's two renames. Children are recorded in ``<build folder>/.kobbq-run-<pid>.json`` and
ended by pid *and* start time (``reap_orphans``), never by name (docs/reliability.md)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
from pydantic import BaseModel, StrictInt, ValidationError

from core.atomic import write_text

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
RECORD_PREFIX = ".kobbq-run-"
GRACE_SECONDS = 3.0
PAUSE_SECONDS = 120.0

_children: dict[int, str] = {}  # pid -> what it is
_staging: set[Path] = set()
_published: list[Path] = []  # releases this process has published: a later signal must not deny them
_records: set[Path] = set()  # run records this process writes
_left_as: str | None = None  # what a signal leaves, in the running command's words (None: a build's)
_left_running = False  # what it leaves keeps running elsewhere (units on workers): not "nothing is left running"
_critical = 0
_pending: int | None = None


# --- processes ----------------------------------------------------------------------------------

def start_time(pid: int) -> float | None:
    """When the process started (a recycled pid has another); None when it is gone or a zombie."""
    try:
        process = psutil.Process(pid)
        return None if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) else process.create_time()
    except psutil.Error:
        return None


def is_running(pid: int, started: float) -> bool:
    """The very process recorded: same pid and same start time."""
    return start_time(pid) == started


def children_of(pid: int) -> list[int]:
    try:
        return sorted(child.pid for child in psutil.Process(pid).children())
    except psutil.Error:
        return []


def end_processes(pids: list[int], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM, then SIGKILL whatever still runs after ``grace`` seconds (0: SIGKILL at once), then wait until they are
    gone (no zombies left). psutil checks that a pid still names the process it found: a recycled pid is never hit."""
    processes = []
    for pid in pids:
        with suppress(psutil.Error):
            processes.append(psutil.Process(pid))
    steps = [(psutil.Process.terminate, grace)] if grace > 0 else []
    for send, timeout in [*steps, (psutil.Process.kill, GRACE_SECONDS)]:
        for process in processes:
            with suppress(psutil.Error):
                send(process)
        processes = psutil.wait_procs(processes, timeout=timeout)[1]


# --- what this process must clean up ------------------------------------------------------------

def register_child(pid: int, what: str) -> None:
    _children[pid] = what
    _write_records()


def unregister_child(pid: int) -> None:
    _children.pop(pid, None)
    _write_records()


def register_staging(path: Path) -> None:
    _staging.add(Path(path))


def unregister_staging(path: Path) -> None:
    _staging.discard(Path(path))


def mark_published(release: Path) -> None:
    """``release`` is published (its second rename is done): a signal from now on says so."""
    _published.append(Path(release))


def leaves(outcome: str, running: bool = False) -> None:
    """What a signal would leave, said by the command running (``kobbq eval run``: the answers are kept); ``running``:
    its work keeps running elsewhere (units on workers), so the line must not say "nothing is left running"."""
    global _left_as, _left_running
    _left_as, _left_running = outcome, running


def stop_message(signal_name: str, published: list[Path]) -> str:
    """The line a signal prints: what was published before it came, else what the command said it leaves."""
    if _left_as is not None and not published:
        return f"interrupted ({signal_name}): stopped; {_left_as}" + ("" if _left_running else
                                                                       "; nothing is left running")
    if published:
        done = ", ".join(str(p) for p in published)
        return (f"interrupted ({signal_name}): stopped after {done} was published (complete and validated); "
                "nothing is left running")
    return f"interrupted ({signal_name}): stopped; nothing was published and nothing is left running"


def _write_records() -> None:
    record = RunRecord(owner=RunProcess(pid=os.getpid(), start=start_time(os.getpid())),
                       children=[RunProcess(pid=pid, start=start_time(pid), what=what)
                                 for pid, what in sorted(_children.items())]).model_dump_json()
    for path in _records:
        with suppress(OSError):  # the folder went away; nothing to record
            write_text(path, record)


def forget_run() -> None:
    """A command's end: this process's records, and what it published (or said it leaves), are no longer needed."""
    global _left_as, _left_running
    _left_as, _left_running = None, False
    for path in list(_records):
        path.unlink(missing_ok=True)
    _records.clear()
    _published.clear()


def reap_orphans(build_folder: Path) -> list[str]:
    """End the recorded children of commands that died (SIGKILL) in this build folder; what was ended."""
    ended = []
    for path in sorted(Path(build_folder).glob(f"{RECORD_PREFIX}*.json")):
        try:
            record = RunRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):  # not a run record (truncated, edited, other JSON): nothing to end
            path.unlink(missing_ok=True)
            continue
        owner = record.owner
        if owner.pid == os.getpid() or is_running(owner.pid, owner.start):
            continue  # its owner is alive: not an orphan
        alive = [c for c in record.children if c.start is not None and is_running(c.pid, c.start)]
        end_processes([c.pid for c in alive])
        ended += [f"{c.what} (pid {c.pid})" for c in alive]
        path.unlink(missing_ok=True)
    return ended


class RunProcess(BaseModel):
    pid: StrictInt
    start: float | None = None
    what: str = "child process"


class RunRecord(BaseModel):
    """A run record as ``_write_records`` writes it: any other file (truncated, edited) is no record to act on."""

    owner: RunProcess
    children: list[RunProcess] = []


# --- signals ------------------------------------------------------------------------------------

@contextmanager
def handling_signals(handler: Callable[[int, object], None] | None = None) -> Iterator[None]:
    """SIGINT and SIGTERM handled by ``handler`` (default: here) for one block, and the caller's handlers back after
    it: a process that runs a command in-process (a test runner, which signals itself to stop its workers) keeps its
    own. Signals reach the main thread only: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, handler or _handle)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def take_over(build_folder: Path) -> None:
    """First thing in a flow: our handlers again (Prefect installs its own SIGTERM handler for a flow run, which
    prints a crash traceback), and this process and its children (now and later) recorded for ``reap_orphans``."""
    signal.signal(signal.SIGINT, _handle)
    signal.signal(signal.SIGTERM, _handle)
    Path(build_folder).mkdir(parents=True, exist_ok=True)
    for pid in children_of(os.getpid()):
        _children.setdefault(pid, "child process")  # e.g. Prefect's temporary API server
    _records.add(Path(build_folder) / f"{RECORD_PREFIX}{os.getpid()}.json")
    _write_records()


@contextmanager
def critical() -> Iterator[None]:
    """A block a signal must not cut in two; the signal takes effect right after it."""
    global _critical
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1
        if _critical == 0 and _pending is not None:
            stop(_pending)


def _handle(signum: int, _frame: object) -> None:
    global _pending
    if _critical:
        _pending = signum
        return
    stop(signum)


def stop(signum: int) -> None:
    """End the children, remove the staging folders, say so in one line and exit. The children are killed outright: they
    are this command's own helpers (Prefect's temporary server's graceful shutdown prints tracebacks)."""
    message = stop_message(signal.Signals(signum).name, _published)
    end_processes(sorted(set(_children) | set(children_of(os.getpid()))), grace=0)
    for folder in sorted(_staging):
        shutil.rmtree(folder, ignore_errors=True)
    forget_run()
    print(message, file=sys.stderr, flush=True)
    os._exit(EXIT_CODES.get(signum, 128 + signum))


# --- fault injection ----------------------------------------------------------------------------

def checkpoint(phase: str) -> None:
    """Pause at ``phase`` when ``KOBBQ_PAUSE_AT`` names it (fault-injection tests only)."""
    if os.environ.get("KOBBQ_PAUSE_AT") != phase:
        return
    if marker := os.environ.get("KOBBQ_PAUSE_FILE"):
        Path(marker).write_text(f"{phase} {os.getpid()}\n", encoding="utf-8")
    deadline = time.monotonic() + PAUSE_SECONDS
    while time.monotonic() < deadline and _pending is None:  # a deferred signal ends the pause
        time.sleep(0.05)
