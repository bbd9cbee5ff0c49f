"""The evaluation's JSON Lines inputs (prepared requests, replay recordings, answer files), read a line at a time.

Decoding goes line by line, so a byte that is not UTF-8 is named where an editor shows it, by
line and column, rather than as an offset into some internal buffer; a line that is not JSON
is named the same way, with the column the JSON parser stopped at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from core.errors import Location, UserError
from core.tables import check_input_file

BOM = "\ufeff"


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line of a UTF-8 file with its number (from 1), without its line break; a leading BOM is dropped."""
    path = check_input_file(Path(path))
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                column = len(raw[:exc.start].decode("utf-8", errors="replace")) + 1
                raise UserError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
                                Location(str(path), number, str(column))) from None
            yield number, (text.removeprefix(BOM) if number == 1 else text).rstrip("\r\n")


def json_records(path: Path) -> Iterator[tuple[Location, object]]:
    """Every non-blank line parsed as JSON, with its location; a line that is not JSON names line and column."""
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"not JSON ({exc.msg})", Location(str(path), number, str(exc.colno))) from None
        yield Location(str(path), number), record
