"""The annotator's labelling workbook (xlsx): one row per BBQ template, a drop-down, a rationale.

Every cell but the label and rationale is locked, the label only accepts ST / TM / SR, and a hidden sheet records
the template set it was made for (``template_set.fingerprint``), so that ``kobbq labels import`` refuses a
workbook made for other templates. The guide sheet is the profile's own (``labelling_guide.txt``), else a neutral
English one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import UserError
from core.profile import Profile
from core.text_files import read_text
from tasks.labels.template_set import ANNOTATOR_LABELS, LABEL_MEANINGS, LabelItem, categories_of, fingerprint
from core.workbooks import save_workbook, set_text

if TYPE_CHECKING:  # openpyxl takes ~0.3 s to import: only the functions that use it import it
    from openpyxl import Workbook

FORMAT = "kobbq-labels-workbook/1"
LABELS_SHEET, GUIDE_SHEET, META_SHEET = "labels", "guide", "meta"
# (header, width): the read-only description of the template, then the two cells to fill.
COLUMNS = [("template", 24), ("category", 16), ("Q_id", 6), ("versions", 9), ("ambiguous context", 50),
           ("disambiguating context", 50), ("negative question", 30), ("non-negative question", 30),
           ("relevant social values", 22), ("known stereotyped groups", 22), ("label", 8), ("rationale", 50)]
HEADERS = [name for name, _ in COLUMNS]
LABEL_COLUMN = HEADERS.index("label") + 1
RATIONALE_COLUMN = HEADERS.index("rationale") + 1


def version_text(item: LabelItem, field: str) -> str:
    """A text over the template's versions: once when they are equal, else one line per version."""
    values = [(row.version, row.texts[field]) for row in item.rows]
    if len({text for _, text in values}) == 1:
        return values[0][1]
    return "\n".join(f"{version or '-'}: {text}" for version, text in values)


def row_values(item: LabelItem) -> list[str]:
    first = item.rows[0]
    return [item.subject, item.category, item.q_id, item.versions, version_text(item, "ambiguous_context"),
            version_text(item, "disambiguating_context"), version_text(item, "negative_question"),
            version_text(item, "non_negative_question"), first.relevant_social_values, first.known_stereotyped_groups]


def guide_rows(profile: Profile, annotator: str) -> list[list[str]]:
    """The guide sheet, one row a line: the culture's own (its folder's labelling_guide.txt, a tab between the cells
    of a line), else a neutral English text with the labels' meanings and the annotator's name."""
    path = profile.existing_file("labelling_guide")
    if path:
        return [line.split("\t") for line in read_text(path, "labelling guide file").splitlines()]
    return [["Label each BBQ template on the 'labels' sheet: choose a label and write why."], [],
            *([label, LABEL_MEANINGS[label]] for label in ANNOTATOR_LABELS), [], ["annotator", annotator]]


def build_workbook(items: list[LabelItem], annotator: str, profile: Profile) -> Workbook:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, PatternFill, Protection
    from openpyxl.worksheet.datavalidation import DataValidation

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = LABELS_SHEET
    sheet.append(HEADERS)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    editable = PatternFill("solid", fgColor="FFF2CC")
    for number, item in enumerate(items, start=2):
        for column, value in enumerate(row_values(item), start=1):
            cell = sheet.cell(number, column)
            set_text(cell, value)
            cell.alignment = Alignment(wrap_text=True, vertical="top")
        for column in (LABEL_COLUMN, RATIONALE_COLUMN):
            cell = sheet.cell(number, column)
            cell.protection = Protection(locked=False)
            cell.fill = editable
            cell.alignment = Alignment(wrap_text=True, vertical="top")
    for column, (_, width) in enumerate(COLUMNS, start=1):
        sheet.column_dimensions[sheet.cell(1, column).column_letter].width = width
    label_letter = sheet.cell(1, LABEL_COLUMN).column_letter
    validation = DataValidation(type="list", formula1='"' + ",".join(ANNOTATOR_LABELS) + '"', allow_blank=True,
                                showErrorMessage=True, errorTitle="label",
                                error=f"Choose one of {', '.join(ANNOTATOR_LABELS)}.")
    validation.add(f"{label_letter}2:{label_letter}{len(items) + 1}")
    sheet.add_data_validation(validation)
    sheet.freeze_panes = "B2"
    sheet.auto_filter.ref = f"A1:{sheet.cell(1, len(HEADERS)).column_letter}{len(items) + 1}"
    sheet.protection.sheet = True
    # Filtering, sorting and resizing stay possible; editing locked cells does not.
    sheet.protection.autoFilter = False
    sheet.protection.sort = False
    sheet.protection.formatColumns = False
    sheet.protection.formatRows = False

    guide = workbook.create_sheet(GUIDE_SHEET)
    for row in guide_rows(profile, annotator):
        guide.append(row)
    guide.column_dimensions["B"].width = 80
    guide.protection.sheet = True

    meta = workbook.create_sheet(META_SHEET)
    for key, value in metadata(items, annotator, profile.name).items():
        meta.append([key, value])
    meta.sheet_state = "veryHidden"
    meta.protection.sheet = True
    workbook.properties.creator = "kobbq labels export"
    workbook.properties.title = f"Labelling workbook for {annotator}"
    return workbook


def metadata(items: list[LabelItem], annotator: str, profile_name: str) -> dict[str, str]:
    return {"format": FORMAT, "annotator": annotator, "profile": profile_name,
            "template_set": fingerprint(items), "templates": str(len(items)),
            "categories": ",".join(categories_of(items))}


def write_workbook(items: list[LabelItem], path: Path, annotator: str, profile: Profile) -> Path:
    """Write the workbook atomically; the same templates and annotator give the same bytes."""
    if not re.fullmatch(r"[\w.-]+", annotator):
        raise UserError(f"annotator name {annotator!r} may only contain letters, digits, '.', '_' and '-'")
    return save_workbook(build_workbook(items, annotator, profile), path)
