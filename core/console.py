"""Progress lines on the console, so a long build shows where it is without Prefect's logs."""

from __future__ import annotations

import codecs
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress

_START = time.perf_counter()
_quiet = False
_copies: list[Callable[[str], None]] = []  # where else each line goes (a Prefect flow run's log)


def set_quiet(quiet: bool) -> bool:
    """Progress lines off (or on again); what the setting was."""
    global _quiet
    was, _quiet = _quiet, quiet
    return was


def counts_text(counts: dict[str, int]) -> str:
    """``{'SR': 4, 'ST': 1}`` -> ``SR 4, ST 1``: counts as a summary line says them, not as Python prints them."""
    return ", ".join(f"{name} {count:,}" for name, count in counts.items()) or "none"


def step(message: str) -> None:
    """One line per finished stage, with the seconds since the command started."""
    if not _quiet:
        print(f"[{time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr, flush=True)
    for copy in _copies:
        copy(message)


@contextmanager
def copied_to(write: Callable[[str], None]) -> Iterator[None]:
    """Every line of the block also given to ``write`` (quiet or not)."""
    _copies.append(write)
    try:
        yield
    finally:
        _copies.remove(write)


def escape_what_cannot_be_shown() -> None:
    """Let stdout and stderr write what their encoding cannot (Hangul with ``PYTHONIOENCODING=ascii``, or a pipe in a
    non-UTF-8 locale) as ``\\uXXXX`` escapes instead of failing: a command must not end in a UnicodeEncodeError
    traceback because of the terminal. UTF-8 streams are left as they are."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or getattr(stream, "errors", "strict") != "strict" or not hasattr(stream, "reconfigure"):
            continue
        with suppress(LookupError, ValueError, OSError):
            if not codecs.lookup(encoding).name.startswith("utf"):
                stream.reconfigure(errors="backslashreplace")


PROGRESS_EVERY = 10.0  # seconds between the plain progress lines written where no terminal reads


class LineProgress(AbstractContextManager):
    """The progress of ``total`` steps as a plain line every ``every`` seconds and one at the end, for a stream
    that is not a terminal (a log file, CI): a bar there writes each of its hundreds of carriage-return updates
    into one long line."""

    def __init__(self, total: int, what: str, unit: str, stream=None, every: float = PROGRESS_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.what, self.unit, self.every, self.clock = total, what, unit, every, clock
        self.stream = stream or sys.stderr
        self.done = self.said = 0
        self.started = self.last = clock()

    def update(self, steps: int = 1) -> None:
        self.done += steps
        if self.clock() - self.last >= self.every:
            self.say()

    def say(self) -> None:
        self.last, self.said = self.clock(), self.done
        print(f"{self.what}: {self.done:,} of {self.total:,} {self.unit} ({self.done / self.total:.0%}, "
              f"{self.last - self.started:.0f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self.done != self.said:
            self.say()

    def __exit__(self, *exc: object) -> None:
        self.close()
