"""Reading the annotators' labels: filled workbooks (xlsx) or their CSV equivalent (``template,label,rationale``,
named after the annotator: ``kim.csv``).

All files are read and checked before anything is used, each problem at its file, sheet, row and cell, and
nothing is imported when one is found. A workbook carries its template set's fingerprint and its profile, so that
labels given for other templates or for another culture are refused; a CSV is checked by its template IDs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_rows
from core.workbooks import read_sheets
from core.findings import Finding
from tasks.labels.template_set import ANNOTATOR_LABELS, LabelItem, categories_of, fingerprint, raise_if_errors
from tasks.labels.workbook import FORMAT, LABELS_SHEET, META_SHEET

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
    """Every file's labels for the template set ``items``, and every problem found on the way; with
    ``profile_name``, a workbook exported for another profile is refused (its labels belong to another culture)."""
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
        absent = [subject for subject in known if subject not in labels]
        if absent:
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
