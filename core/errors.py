"""User-facing errors: they name the file, row and column, and never show a traceback."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    """Where a problem is: a file, and optionally a row (1-based, as a spreadsheet shows it) and a column."""

    file: str
    row: int | None = None
    column: str | None = None
    sheet: str | None = None

    def __str__(self) -> str:
        parts = {"sheet": self.sheet, "row": self.row, "column": self.column}
        shown = [f"{name} {value}" for name, value in parts.items() if value is not None]
        return ", ".join([printable(self.file), *shown])


class UserError(Exception):
    """An error caused by the user's input or command line; the CLI prints it in one paragraph and exits 1."""

    def __init__(self, message: str, where: Location | str | Path | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(self.render())

    def render(self) -> str:
        if self.where is None:
            return self.message
        where = self.where if isinstance(self.where, Location) else printable(str(self.where))
        return f"{where}: {self.message}"


def redact(message: str, secret: str | None) -> str:
    """Remove the key from any text that may reach a log, an exception or an output file."""
    return message.replace(secret, "***") if secret else message


def printable(text: str) -> str:
    """A path as an error line shows it: a control character (a line break in a folder name) written as its
    escape, so the error stays one line; every other character (Hangul included) as it is."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


OS_ERROR_HINTS = {
    errno.ENOSPC: "the disk is full: free space on it (or choose another --out) and run again",
    errno.EDQUOT: "the disk quota is used up: free space (or choose another --out) and run again",
    errno.EISDIR: "a folder was given where a file is expected: give the file",
    errno.ENOTDIR: "a part of this path is a file, not a folder",
    errno.EEXIST: "a file is where a folder is needed: give another path, or move the file away",
    errno.ENOENT: "check the path",
    errno.EACCES: "permission denied: make it readable (or writable), or choose another path",
    errno.EPERM: "not permitted: make it readable (or writable), or choose another path",
    errno.EROFS: "the file system is read-only: choose another --out",
    errno.ENAMETOOLONG: "a name in this path is longer than the file system allows (255 bytes): choose a shorter one",
}


def os_errno(exc: OSError) -> int | None:
    """The error's number; pyarrow's writers give none for a full disk, only its message."""
    return errno.ENOSPC if exc.errno is None and "No space left on device" in str(exc) else exc.errno


def describe_os_error(exc: OSError) -> str:
    """One line for an OS error (a full disk): the file it names and what to do about it."""
    code = os_errno(exc)
    # A copy or a rename that fills the disk names its source first (shutil.copyfile, os.replace): the file being
    # written is the second one.
    named = exc.filename2 if code in (errno.ENOSPC, errno.EDQUOT) and exc.filename2 else exc.filename
    where = f"{printable(str(named))}: " if named else ""
    what = exc.strerror or str(exc)
    hint = OS_ERROR_HINTS.get(code, "check that the folder exists, has free space and may be written")  # type: ignore[arg-type]
    return f"{where}{what}; {hint} (or run again with --debug for the traceback)"
