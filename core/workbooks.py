"""Workbooks saved atomically so that the same content gives the same bytes (openpyxl stamps the save time in
``docProps/core.xml`` and on every zip entry: a stage's fingerprint of an unchanged export must not change); read as
text."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.atomic import write_bytes
from core.errors import UserError
from core.text_files import check_input_file

if TYPE_CHECKING:  # openpyxl takes ~0.3 s to import: only the functions that use it import it
    from openpyxl import Workbook
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

# Not the real save time: the output must depend on the content only.
FIXED_TIME = datetime(2000, 1, 1)
CORE_PROPERTIES = "docProps/core.xml"


def set_text(cell, value: object) -> None:
    """Assign ``value``, keeping any string as text: template text such as '=...' or '-Women are ...' must
    never be evaluated as a formula by a spreadsheet."""
    cell.value = value
    if isinstance(value, str):
        cell.data_type = "s"


def write_rows(sheet, rows: Iterable[Sequence[object]]) -> None:
    """``rows`` into ``sheet`` from its first row on, every string a text cell (``set_text``)."""
    for number, values in enumerate(rows, start=1):
        for column, value in enumerate(values, start=1):
            set_text(sheet.cell(number, column), value)


def table_workbook(sheets: dict[str, list[Sequence[object]]]) -> Workbook:
    """One sheet per title, its header row then its rows, the header frozen: the plain tables a person or the build
    reads (the survey's questionnaire, the post-edit's template workbooks)."""
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        write_rows(workbook.create_sheet(title), rows)
        workbook[title].freeze_panes = "A2"
    return workbook


def new_workbook(title: str, header: list[str]) -> Workbook:
    """A ``table_workbook`` of one sheet, ``title``, its header in bold: how a workbook people edit begins."""
    from openpyxl.styles import Font

    workbook = table_workbook({title: [header]})
    for cell in workbook.active[1]:
        cell.font = Font(bold=True)
    return workbook


def reproducible_bytes(workbook: Workbook) -> bytes:
    """The xlsx bytes of ``workbook`` with created/modified and every zip entry time set to ``FIXED_TIME``."""
    from openpyxl.xml.functions import tostring

    buffer = io.BytesIO()
    workbook.save(buffer)  # sets properties.modified to now; put the fixed time back in core.xml below
    properties = workbook.properties
    properties.created = properties.modified = FIXED_TIME
    core = tostring(properties.to_tree())
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = core if info.filename == CORE_PROPERTIES else source.read(info.filename)
            target.writestr(zipfile.ZipInfo(info.filename, FIXED_TIME.timetuple()[:6]), content,
                            zipfile.ZIP_DEFLATED)
    return out.getvalue()


def save_workbook(workbook: Workbook, path: Path) -> Path:
    """Write ``workbook`` to ``path`` reproducibly (see ``reproducible_bytes``) and atomically; return ``path``."""
    return write_bytes(path, reproducible_bytes(workbook))


def text_cell(value: object) -> str:
    return "" if value is None else str(value)


def read_sheets(path: Path, cell: Callable[[object], object] = text_cell) -> dict[str, list[list]]:
    """Every sheet's cells as ``cell`` gives them (default: text) by sheet name; not a workbook: a UserError."""
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    # Not a zip, a zip without a workbook, a damaged sheet (XML errors are SyntaxErrors, lxml's too).
    unreadable = (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, SyntaxError, IndexError, ValueError)
    check_input_file(path, "workbook")  # a folder, a device or a named pipe: named as such, before openpyxl
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
        try:
            return {sheet.title: _cells(sheet, cell) for sheet in workbook.worksheets}
        finally:
            workbook.close()
    except unreadable as exc:
        raise UserError(f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})", path) from None


def _cells(sheet: ReadOnlyWorksheet, cell: Callable[[object], object]) -> list[list]:
    """Every row the sheet holds, each as wide as the widest. Read-only mode reads the used range the file declares,
    which some applications write wrong (``A1:B2`` for a full sheet: the rest silently cut off); openpyxl's
    ``reset_dimensions`` makes it read what the sheet holds, and the padding gives back the rectangle it gave."""
    sheet.reset_dimensions()
    rows = [list(row) for row in sheet.iter_rows(values_only=True)]
    width = max(map(len, rows), default=0)
    return [[cell(v) for v in row + [None] * (width - len(row))] for row in rows]
