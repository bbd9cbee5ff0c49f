"""The annotators' files: the labelling workbook sent out (one row per BBQ template, a drop-down, a rationale; every
other cell locked) and the labels read back from filled workbooks or CSVs (``template,label,rationale``). A hidden sheet
records the profile and template set (``template_set.fingerprint``) so that labels for other templates or another
culture are refused; every file is checked before anything is imported, each problem at its cell."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import Location, UserError
from core.findings import Finding
from core.profile import Profile
from core.tables import read_rows
from core.text_files import read_text
from core.workbooks import new_workbook, read_sheets, save_workbook, set_text
from tasks.labels.template_set import (ANNOTATOR_LABELS, LABEL_MEANINGS, LabelItem, categories_of, fingerprint,
                                       raise_if_errors)

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
    """The guide sheet's rows: the profile's labelling_guide.txt (tab-separated cells), else a neutral English text."""
    if path := profile.existing_file("labelling_guide"):
        return [line.split("\t") for line in read_text(path, "labelling guide file").splitlines()]
    return [["Label each BBQ template on the 'labels' sheet: choose a label and write why."], [],
            *([label, LABEL_MEANINGS[label]] for label in ANNOTATOR_LABELS), [], ["annotator", annotator]]


def build_workbook(items: list[LabelItem], annotator: str, profile: Profile) -> Workbook:
    from openpyxl.styles import Alignment, PatternFill, Protection
    from openpyxl.worksheet.datavalidation import DataValidation

    workbook = new_workbook(LABELS_SHEET, HEADERS)
    sheet = workbook.active
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
    for allowed in ("autoFilter", "sort", "formatColumns", "formatRows"):  # editing locked cells is all it prevents
        setattr(sheet.protection, allowed, False)

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


# --- the filled files, read back --------------------------------------------------------------------------------------

CSV_COLUMNS = ["template", "label", "rationale"]


@dataclass(frozen=True)
class RawLabel:
    """One filled row as found in the file, before any check."""

    template: str
    label: str
    rationale: str
    template_where: Location
    label_where: Location
    rationale_where: Location


@dataclass(frozen=True)
class AnnotatorFile:
    path: Path
    annotator: str
    meta: dict[str, str] | None  # the workbook's hidden metadata; None for a CSV
    rows: list[RawLabel]


@dataclass(frozen=True)
class Annotation:
    annotator: str
    subject: str
    label: str
    rationale: str
    where: Location


@dataclass(frozen=True)
class AnnotatorLabels:
    annotator: str
    path: Path
    labels: dict[str, Annotation]  # subject -> annotation, one for every template of the set


def read_annotator_file(path: Path) -> AnnotatorFile:
    """A filled workbook or its CSV: the same three columns, a cell named by its letter in a workbook."""
    path = Path(path)
    if not path.exists():
        raise UserError("annotator file does not exist", path)
    meta, sheet = None, None
    if path.suffix.lower() == ".xlsx":
        sheets = read_sheets(path)
        if META_SHEET not in sheets or LABELS_SHEET not in sheets:
            raise UserError(f"not a labelling workbook made by 'kobbq labels export' (no {META_SHEET!r} or "
                            f"{LABELS_SHEET!r} sheet)", path)
        meta = {k.strip(): v.strip() for k, v, *_ in sheets[META_SHEET] if k}
        lines, sheet = sheets[LABELS_SHEET], LABELS_SHEET
    elif path.suffix.lower() == ".csv":
        lines = read_rows(path)
    else:
        raise UserError("expected a labelling workbook (.xlsx) or its CSV equivalent (.csv)", path)
    header = [cell.strip() for cell in lines[0]] if lines else []
    if missing := [c for c in CSV_COLUMNS if c not in header]:
        raise UserError(f"the header lacks column(s) {', '.join(missing)}; an annotator file has columns "
                        f"{', '.join(CSV_COLUMNS)}", Location(str(path), 1, sheet=sheet))
    index = {name: header.index(name) for name in CSV_COLUMNS}

    def where(name: str, number: int) -> Location:
        if sheet is None:
            return Location(path.name, number, name)
        from openpyxl.utils import get_column_letter

        return Location(path.name, number, f"{name} (cell {get_column_letter(index[name] + 1)}{number})", sheet)

    rows = []
    for number, cells in enumerate(lines[1:], start=2):
        values = [cells[index[name]].strip() if index[name] < len(cells) else "" for name in CSV_COLUMNS]
        if any(values):
            rows.append(RawLabel(*values, *(where(name, number) for name in CSV_COLUMNS)))
    return AnnotatorFile(path, (meta or {}).get("annotator") or path.stem, meta, rows)


def categories_in(files: list[AnnotatorFile]) -> list[str]:
    """The BBQ categories the files are about: from a workbook's metadata, else from its template IDs."""
    found: list[str] = []
    for file in files:
        if file.meta and file.meta.get("categories"):
            found.extend(file.meta["categories"].split(","))
        else:
            found.extend(row.template.split(":")[1] for row in file.rows if row.template.count(":") == 2)
    return list(dict.fromkeys(found))


def check_annotator_files(files: list[AnnotatorFile], items: list[LabelItem], require_rationale: bool,
                          profile_name: str | None = None) -> tuple[list[AnnotatorLabels], list[Finding]]:
    """Every file's labels for the template set ``items``, and every problem found; with ``profile_name``, a workbook
    exported for another profile is refused."""
    findings: list[Finding] = []

    def problem(where: Location, code: str, message: str) -> None:
        findings.append(Finding("error", where, code, message))

    expected_print = fingerprint(items)
    known = {item.subject: item for item in items}
    seen_annotators: dict[str, Path] = {}
    result = []
    for file in files:
        if file.annotator in seen_annotators:
            problem(Location(file.path.name), "duplicate-annotator",
                    f"annotator {file.annotator!r} also labelled {seen_annotators[file.annotator].name}")
        seen_annotators[file.annotator] = file.path
        if file.meta is not None:
            exported_for = file.meta.get("profile", "")
            if profile_name is not None and exported_for and exported_for != profile_name:
                problem(Location(file.path.name, sheet=META_SHEET), "other-profile",
                        f"this workbook was exported for profile {exported_for!r}, and is imported under profile "
                        f"{profile_name!r}; import it with --profile {exported_for} (or export a workbook for "
                        f"{profile_name!r})")
                result.append(AnnotatorLabels(file.annotator, file.path, {}))
                continue
            if file.meta.get("format") != FORMAT:
                problem(Location(file.path.name, sheet=META_SHEET), "workbook-format",
                        f"workbook format {file.meta.get('format')!r} is not {FORMAT!r}")
            elif file.meta.get("template_set") != expected_print:
                problem(Location(file.path.name, sheet=META_SHEET), "other-template-set",
                        f"this workbook was exported for another template set ({file.meta.get('templates')} "
                        f"templates of {file.meta.get('categories')}, fingerprint {file.meta.get('template_set')}); "
                        f"the BBQ templates read now are {len(items)} templates of "
                        f"{','.join(categories_of(items))} (fingerprint {expected_print}). Import it with the "
                        "BBQ files it was exported from, or export a new workbook")
                result.append(AnnotatorLabels(file.annotator, file.path, {}))
                continue
        labels: dict[str, Annotation] = {}
        for row in file.rows:
            if row.template not in known:
                problem(row.template_where, "unknown-template",
                        f"template ID {row.template!r} does not exist in the BBQ templates read")
                continue
            if row.template in labels:
                problem(row.template_where, "duplicate-template",
                        f"{row.template} is labelled twice (first at row {labels[row.template].where.row})")
                continue
            label = row.label.upper()
            if not label:
                problem(row.label_where, "no-label", f"{row.template} has no label; choose one of "
                                                     f"{', '.join(ANNOTATOR_LABELS)}")
            elif label not in ANNOTATOR_LABELS:
                problem(row.label_where, "unknown-label",
                        f"unknown label {row.label!r} for {row.template}; choose one of {', '.join(ANNOTATOR_LABELS)}")
            elif require_rationale and not row.rationale:
                problem(row.rationale_where, "no-rationale",
                        f"{row.template} is labelled {label} without a rationale (the profile requires one)")
            labels[row.template] = Annotation(file.annotator, row.template, label, row.rationale, row.label_where)
        if absent := [subject for subject in known if subject not in labels]:
            listed = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
            problem(Location(file.path.name), "missing-templates",
                    f"{len(absent)} template(s) of the set are not labelled: {listed}")
        result.append(AnnotatorLabels(file.annotator, file.path, labels))
    return result, findings


def import_annotations(paths: list[Path], items: list[LabelItem], require_rationale: bool,
                       profile_name: str | None = None) -> list[AnnotatorLabels]:
    """Read and check every file; all of them are imported, or none (``FindingsError``)."""
    files = [read_annotator_file(path) for path in paths]
    labels, findings = check_annotator_files(files, items, require_rationale, profile_name)
    raise_if_errors(f"{len(files)} annotator file(s)", findings)
    return labels


def votes_by_template(annotators: list[AnnotatorLabels]) -> dict[str, dict[str, str]]:
    """subject -> annotator -> label: the form ``load_consensus`` takes to record the votes."""
    votes: dict[str, dict[str, str]] = {}
    for sheet in annotators:
        for subject, annotation in sheet.labels.items():
            votes.setdefault(subject, {})[sheet.annotator] = annotation.label
    return votes
