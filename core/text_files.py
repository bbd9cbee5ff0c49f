"""Input files read one way: a regular file (a device, FIFO or socket is refused before reading), within a size limit
counted in the bytes actually read (``/proc`` reports 0 bytes, ``/dev/zero`` never ends), and UTF-8 text whose bad
bytes, JSON and TOML errors are reported at their line and column; a JSON Lines file is read a line at a time."""

from __future__ import annotations

import codecs
import json
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

from core.errors import Location, UserError
from core.fingerprint import take_kept

MAX_FILE_BYTES = 1 << 30  # 1 GiB: far above any real input (the KoBBQ template file is ~1 MB)
READ_BLOCK = 1 << 20


def check_input_file(path: Path, what: str = "file") -> Path:
    """An input that exists and is a regular file within ``MAX_FILE_BYTES`` as reported; else a UserError naming it."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{what} does not exist", path) from None
    except OSError as exc:
        raise UserError(f"{what} cannot be read ({exc.strerror or exc})", path) from None
    if stat.S_ISDIR(mode):
        raise UserError(f"is a folder; expected a {what}", path)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise UserError(f"is a device, not a {what}; give a file", path)
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket"
        raise UserError(f"is {kind}, not a {what}: reading it would wait for a writer; give a regular file (save "
                        "what the pipe carries to a file first)", path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UserError(f"is {size:,} bytes; an input file may have at most {MAX_FILE_BYTES:,}", path)
    return path


def read_bytes(path: Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, stopping with a UserError as soon as more than ``limit`` have been read."""
    path = check_input_file(path, what)
    kept = take_kept(path)  # hashed a moment ago by the fingerprint: the same bytes, not read again
    if kept is not None and len(kept) <= limit:
        return kept
    blocks, total = [], 0
    with path.open("rb") as handle:
        while block := handle.read(min(READ_BLOCK, limit + 1 - total)):
            total += len(block)
            if total > limit:
                raise _too_long(path, limit)
            blocks.append(block)
    return b"".join(blocks)


def _too_long(path: Path, limit: int) -> UserError:
    return UserError(f"has more than {limit:,} bytes (counted while reading); an input file may have at most "
                     f"{limit:,}", path)


def line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of the byte at ``offset``, as an editor shows them."""
    start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def decode(data: bytes, path: Path | str, line: int = 1) -> str:
    """UTF-8 text (a byte-order mark starting the file is dropped); a byte that is not UTF-8 is reported at its line
    and column (``line``: the line ``data`` starts at, for a file read a line at a time)."""
    if line == 1 and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found, column = line_and_column(data, exc.start)
        raise UserError(f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save it as UTF-8",
                        Location(str(path), line + found - 1, str(column))) from None


def read_text(path: Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    return decode(read_bytes(path, what, limit), path)


def read_json(path: Path, what: str = "file") -> object:
    """A JSON file; a syntax error (a truncated file) is a UserError at its line and column."""
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise UserError(f"not valid JSON ({exc.msg}; truncated or edited?)",
                        Location(str(path), exc.lineno, str(exc.colno))) from None


def read_toml(path: Path, what: str = "file") -> dict[str, object]:
    """A TOML file; a syntax error is a UserError (tomllib's message gives the line and column)."""
    try:
        return tomllib.loads(read_text(path, what))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"not valid TOML: {exc}", path) from None


def text_lines(path: Path, limit: int = MAX_FILE_BYTES) -> Iterator[tuple[int, str]]:
    """Every line of a UTF-8 input file with its number (from 1), without its line break, streamed and checked."""
    path = check_input_file(Path(path))
    number, total = 0, 0
    with path.open("rb") as handle:
        while raw := handle.readline(limit + 1 - total):
            number, total = number + 1, total + len(raw)
            if total > limit:
                raise _too_long(path, limit)
            yield number, decode(raw, path, number).rstrip("\r\n")


def json_records(path: Path) -> Iterator[tuple[Location, object]]:
    """Every non-blank line of a JSON Lines file parsed, with its location (a line that is not JSON: an error)."""
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"not JSON ({exc.msg})", Location(str(path), number, str(exc.colno))) from None
        yield Location(str(path), number), record
