"""The release checks' child processes, started ahead of their job (``warm_up``: Great Expectations' ~4 s import
overlaps the build's reading), and what the build makes of what they say; this module imports nothing heavy. A child
that dies or stalls is one error line inside the staging, so nothing is published. The result is our own
deterministic ``validation.json``/``.md``: Great Expectations' raw result carries run IDs and times.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from core import console, interrupt
from core.errors import UserError, os_errno
from core.tables import markdown_table

WAIT_FOR_JOB = "--wait-for-job"  # the child's one argument: its job comes on stdin
READY, PROGRESS, REPORTED = "ready", "progress", "reported"  # what the child says on its stdout, in this order
OS_ERROR_EXIT = 3  # the child met an OSError (a full disk): its last stderr line is ``os_error_line``'s
IMPORT_FAILED = 4  # the child could not import Great Expectations: its stderr says why
STALL_VARIABLE, STALL_DEFAULT = "KOBBQ_CHECKS_STALL", 30.0
WAITING_LINE = 10.0  # at most, seconds between the lines that say the build is still waiting


@dataclass(frozen=True)
class CheckOutcome:
    sample_set: str  # "all" or "test"
    expectation: str  # Great Expectations' expectation type
    column: str
    rule: str  # what it checks, in words
    success: bool
    unexpected_count: int
    examples: list[str] = field(default_factory=list)  # sample_ids (or values) that break it

    def render(self) -> str:
        examples = f"; e.g. {', '.join(self.examples)}" if self.examples else ""
        return f"{self.rule} [{self.expectation} on {self.sample_set}.{self.column}]: {self.unexpected_count} row(s){examples}"


@dataclass(frozen=True)
class ValidationReport:
    success: bool
    outcomes: list[CheckOutcome]

    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.success]

    def summary(self) -> str:
        """``46 of 46 expectations passed``: the suite's result, in words."""
        return f"{len(self.outcomes) - len(self.failures())} of {len(self.outcomes)} expectations passed"

    def as_json(self) -> dict[str, object]:
        return {"success": self.success, "expectations": len(self.outcomes),
                "failed": len(self.failures()),
                "results": [o.__dict__ for o in self.outcomes]}


class ReleaseValidationError(UserError):
    def __init__(self, report: ValidationReport) -> None:
        lines = [f"the release failed {len(report.failures())} of {len(report.outcomes)} checks; "
                 "nothing was published:"]
        lines += [f"  - {o.render()}" for o in report.failures()]
        super().__init__("\n".join(lines))
        self.report = report


def summary_markdown(report: ValidationReport) -> str:
    """``validation.md``: every expectation and its result, a failure with the first rows that break it."""
    rows = [[o.sample_set, o.rule, f"`{o.expectation}` {o.column}", "pass" if o.success else
             f"FAIL: {o.unexpected_count} row(s)" + (f"; e.g. {', '.join(o.examples)}" if o.examples else "")]
            for o in report.outcomes]
    return "\n".join(markdown_table(["set", "rule", "expectation", "result"], rows)) + "\n"


def write_results(report: ValidationReport, folder: Path) -> None:
    (folder / "validation.json").write_text(json.dumps(report.as_json(), ensure_ascii=False, indent=2,
                                                       sort_keys=True) + "\n", encoding="utf-8")
    (folder / "validation.md").write_text(summary_markdown(report), encoding="utf-8")


def read_results(folder: Path) -> ValidationReport:
    data = json.loads((folder / "validation.json").read_text(encoding="utf-8"))
    return ValidationReport(bool(data["success"]), [CheckOutcome(**item) for item in data["results"]])


def stall_seconds() -> float:
    """How long the build waits for the child's next line before it gives up on it."""
    text = os.environ.get(STALL_VARIABLE, "")
    try:
        value = float(text) if text else STALL_DEFAULT
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UserError(f"{STALL_VARIABLE}={text!r} is not a number of seconds above 0 (default {STALL_DEFAULT:.0f})")
    return value


class CheckChild(subprocess.Popen):
    """A checks' child (registered: a signal ends it), started with ``-P`` so that the working folder (a ``tasks``
    package) cannot shadow the project's. Its lines are read by a thread into a queue, so the build waits for one
    with a bound; its stderr goes to a temporary file, so it never waits for the build to read it."""

    def __init__(self) -> None:
        self._errors = tempfile.TemporaryFile()
        super().__init__([sys.executable, "-P", "-m", "tasks.release.checks", WAIT_FOR_JOB], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=self._errors, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.said: set[str] = set()  # what the build has read of it
        threading.Thread(target=self._read, name=f"checks-child-{self.pid}", daemon=True).start()
        interrupt.register_child(self.pid, "release validation")

    def _read(self) -> None:
        assert self.stdout is not None
        for line in self.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)  # the child closed its stdout: it has ended

    def stderr_text(self) -> str:
        """What the child wrote to its stderr (read once it has ended)."""
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", "replace")

    def wait_for(self, wanted: str, progress: Callable[[str], None] = console.step) -> None:
        """Read the child's lines until ``wanted``. One that ends first, or neither says a line nor uses the processor
        (its progress, so a slow import on a busy machine goes on) for ``stall_seconds``, is ended and an error."""
        bound, silent, waited = stall_seconds(), 0.0, 0.0
        pause, used = min(WAITING_LINE, bound / 3), self.cpu_seconds()
        while wanted not in self.said:
            try:
                line = self.lines.get(timeout=min(pause, bound - silent))
            except queue.Empty:
                step, used_before, used = min(pause, bound - silent), used, self.cpu_seconds()
                silent, waited = (0.0 if used > used_before else silent + step), waited + step
                if silent >= bound:
                    self.end()
                    raise UserError(f"the release checks' child (pid {self.pid}) made no progress for {bound:.0f} s "
                                    "(stopped, or stuck) and was ended; nothing was published; build again, or give "
                                    f"it longer with {STALL_VARIABLE}=SECONDS") from None
                progress(f"release checks: still waiting for their child (pid {self.pid}) after {waited:.0f} s"
                         + (f", {silent:.0f} s without progress; it is given up at {bound:.0f} s" if silent else ""))
                continue
            if line is None:
                self.wait()
                self.end()
                raise self.failure()
            silent = 0.0
            self.said.add(line.split(" ", 1)[0])

    def cpu_seconds(self) -> float:
        """The processor time the child has used (psutil); 0 once it is gone."""
        try:
            times = psutil.Process(self.pid).cpu_times()
        except psutil.Error:
            return 0.0
        return times.user + times.system

    def failure(self) -> Exception:
        """Why the child ended before it reported, as the build says it."""
        code, errors = self.returncode, self.stderr_text().strip()
        last = errors.splitlines()[-1] if errors else ""
        if code == OS_ERROR_EXIT:  # e.g. a full disk: the command says so in one line
            return os_error_from(errors)
        if code == IMPORT_FAILED:
            return UserError(f"Great Expectations cannot be imported ({last}); nothing was built; reinstall the "
                             "project (pip install -e .) and build again")
        if code is not None and code < 0:
            return UserError(f"the release checks' child (pid {self.pid}) was ended by {signal.Signals(-code).name} "
                             "before it reported; nothing was published; build again (SIGKILL without anyone "
                             "sending it is the system's out-of-memory killer: free memory first)")
        return UserError(f"the release checks' child (pid {self.pid}) ended with exit code {code} before it "
                         f"reported ({last or 'nothing on its stderr'}); nothing was published; build again")

    def end(self) -> None:
        """End the child if it still runs, and forget it."""
        if self.poll() is None:
            interrupt.end_processes([self.pid])
            self.wait()
        interrupt.unregister_child(self.pid)


def os_error_line(exc: OSError) -> str:
    """An OSError as one JSON line, for the parent to raise again (``os_error_from``)."""
    return json.dumps({"errno": os_errno(exc), "strerror": exc.strerror or str(exc),
                       "filename": None if exc.filename is None else str(exc.filename)})


def os_error_from(stderr: str) -> OSError:
    """The child's OSError again, from the last line of its stderr."""
    try:
        record = json.loads(stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):  # no line, or not the JSON of ``os_error_line``
        record = None
    record = record if isinstance(record, dict) else {}
    return OSError(record.get("errno"), record.get("strerror") or "release validation failed: " + stderr[-500:],
                   record.get("filename"))


class ValidationChild(AbstractContextManager):
    """The suite in a child process (a spare, else a new one) beside the caller's writes. When the block ends, the
    child has reported and ends by itself, or it is ended (an error, a signal); none outlives the command."""

    def __init__(self, folder: Path, all_parquet: str, test_parquet: str, unknown: str,
                 expected_by_prefix: dict[str, int], generated: bool = False) -> None:
        self.folder, self.started = folder, time.perf_counter()
        job = {"folder": str(folder), "all": all_parquet, "test": test_parquet, "unknown": unknown,
               "expected": expected_by_prefix, "generated": generated}
        self.process = take_child()
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(job, sort_keys=True) + "\n")  # one line
        self.process.stdin.close()

    def __exit__(self, kind, *_) -> None:
        """A child that has reported is not waited for: its interpreter's teardown (~0.4 s for Great Expectations'
        objects) goes on beside the build; the next ``warm_up`` or the command's end (``_end_children``) ends it if it
        still runs. One that has not reported is ended (``wait_for`` ends one that dies or stalls first)."""
        if kind is not None:
            self.process.end()
            return
        self.process.wait_for(REPORTED)
        _ending.append(self.process)

    def result(self) -> ValidationReport:
        """Wait for the child's report: what it wrote to validation.json."""
        self.process.wait_for(REPORTED)
        return read_results(self.folder)

    def report(self, progress: Callable[[str], None]) -> ValidationReport:
        """Wait for the suite; a failure raises, so the staged release is never published."""
        interrupt.checkpoint("validation")
        report = self.result()
        progress(f"release checks: {report.summary()} in {time.perf_counter() - self.started:.1f} s (Great "
                 "Expectations, child process, alongside the other writes)")
        if not report.success:
            raise ReleaseValidationError(report)
        return report


_spares: list[CheckChild] = []  # waiting for a job
_ending: list[CheckChild] = []  # reported, ending by themselves


def warm_up(count: int = 1) -> None:
    """Have ``count`` children waiting for a job (a release's checks, and each twin's). Those that reported are
    ended if still running (their work is written; a hung teardown holds nothing) and forgotten, as are dead spares."""
    dead = [spare for spare in _spares if spare.poll() is not None]  # polled once, so each dead one is ended
    for child in [*_ending, *dead]:
        child.end()
    _ending.clear()
    _spares[:] = [spare for spare in _spares if spare not in dead]
    while len(_spares) < count:
        _spares.append(CheckChild())


def ready() -> None:
    """Wait for the spares' import: a failed one is one error line before the build's flow run starts."""
    for spare in _spares:
        spare.wait_for(READY)


def take_child() -> CheckChild:
    """A waiting spare, else a new child."""
    warm_up(0)
    return _spares.pop(0) if _spares else CheckChild()


def _end_children() -> None:
    """The command's end: its children (the spares no build took, those that reported and may still be ending) are
    ended, so that nothing is left running."""
    for child in [*_ending, *_spares]:
        child.end()
    _ending.clear()
    _spares.clear()


atexit.register(_end_children)
