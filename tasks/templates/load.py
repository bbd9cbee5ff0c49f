"""The culturally adapted template (KoBBQ format): its model and its TSV loader. Loading never raises on a bad row:
it returns findings, so that ``kobbq validate`` lists every problem at once and a build names them all.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import Location, UserError
from core.tables import read_rows
from tasks.templates.corrections import AppliedCorrection, Correction, apply_corrections
from core.findings import Finding
from core.text import check_text, normalise_text
from tasks.templates.slots import DEFAULT_SEPARATORS, ParsedText, parse_declarations, parse_text


# Model field -> column of the KoBBQ TSV, for the six fields that expansion fills.
TEXT_COLUMNS = {
    "ambiguous_context": "Ambiguous_context",
    "disambiguating_context": "Disambiguating_context",
    "biased_question": "Biased_question",
    "counter_biased_question": "Counter-biased_question",
    "biased_answer": "Biased_question_answer",
    "counter_biased_answer": "Counter-biased_question_answer",
}
REQUIRED_COLUMNS = ["Category", "ID", "version", "Label_annotation", "Stereotype", "Names", "Lexical_diversity",
                    *TEXT_COLUMNS.values()]
REQUIRED_CELLS = [c for c in REQUIRED_COLUMNS if c != "Lexical_diversity"]
NOT_APPLICABLE = "N/A"  # how the KoBBQ file marks a newly-created template's missing BBQ link
# The template labels (Label_annotation): simply-transferred, target-modified, sample-removed, newly-created.
ST, TM, SR, NC = "ST", "TM", "SR", "NC"


@dataclass(frozen=True)
class TemplateRow:
    source: str
    row: int  # line of the file (the header is line 1)
    category: str
    template_id: int
    version: str
    label: str
    stereotype: str
    texts: dict[str, str]  # TEXT_COLUMNS keys -> text with inline slot lists
    names: dict[str, tuple[str, ...]]  # N1, N2
    lexical: dict[str, tuple[str, ...]]  # W1, X2, ...
    target_group: str = ""
    bbq_id: str = ""
    bbq_category: str = ""
    columns: dict[str, str] = field(default_factory=dict, repr=False)  # every column, corrected and normalised
    separators: tuple[str, ...] = DEFAULT_SEPARATORS  # what separates the items of a slot list (the profile's)

    @property
    def key(self) -> str:
        return f"{self.category}|{self.template_id}|{self.version}"

    @property
    def template_key(self) -> tuple[str, int]:
        return (self.category, self.template_id)

    @property
    def parsed(self) -> dict[str, ParsedText]:
        """The texts split at their inline slots, parsed when asked and not kept: a release's rows stay loaded
        while its samples are written, and the parsed copies cost ~5 KB a row (~28 MB for 10x the real file)."""
        return {name: parse_text(text, self.separators) for name, text in self.texts.items()}

    @property
    def slots(self) -> dict[str, tuple[str, ...]]:
        return {**self.names, **self.lexical}

    def where(self, column: str | None = None) -> Location:
        return Location(self.source, self.row, column)


def rows_by_template(templates: list[TemplateRow]) -> dict[tuple[str, int], list[TemplateRow]]:
    """The rows (versions) of each template, by (category, ID), in input order."""
    rows_of: dict[tuple[str, int], list[TemplateRow]] = {}
    for template in templates:
        rows_of.setdefault(template.template_key, []).append(template)
    return rows_of


@dataclass(frozen=True)
class NormalisationRecord:
    row: int
    row_key: str
    column: str
    what: str  # "control character", "NFC", "whitespace"


@dataclass
class LoadedTemplates:
    path: Path
    templates: list[TemplateRow]
    findings: list[Finding]
    corrections: list[AppliedCorrection]
    normalisations: list[NormalisationRecord]
    columns: list[str]
    vocabulary: Any = None  # workbook templates: their vocabulary (tasks.templates.workbook.Vocabulary)
    # Workbook templates: file -> language-selected column -> the sheet's own column (names_es), for findings.
    sheet_columns: dict[str, dict[str, str]] = field(default_factory=dict)


def read_tsv(path: Path) -> tuple[list[str], list[dict[str, str]], list[int]]:
    """Read a tab-separated file without quote handling (template text contains quotes)."""
    if path.is_dir():
        raise UserError("is a folder; expected a template file", path)
    lines = read_rows(path, "\t", csv.QUOTE_NONE)
    if not lines or not any(lines[0]):
        raise UserError("empty file; expected a header row", path)
    header = [h.strip() for h in lines[0]]
    if repeated := sorted({h for h in header if header.count(h) > 1}):
        raise UserError(f"duplicate column(s) {', '.join(repeated)} in the header", Location(str(path), 1))
    rows, numbers = [], []
    for number, values in enumerate(lines[1:], start=2):
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise UserError(f"has {len(values)} tab-separated cells but the header has {len(header)}",
                            Location(str(path), number))
        rows.append(dict(zip(header, values)))
        numbers.append(number)
    return header, rows, numbers


def checked_row(where: Location, cells: dict[str, str], required: list[str], id_column: str,
                declarations: dict[str, Callable[[str], dict]], findings: list[Finding]
                ) -> tuple[int | None, dict[str, dict]]:
    """A row of any format checked before it becomes a template, each problem a finding at its cell: required cells, a
    whole-number ID, readable ``declarations`` (column -> parser raising ValueError). Returns the ID (None: no
    template) and each declaration parsed."""
    def problem(column: str, code: str, message: str) -> None:
        findings.append(Finding("error", Location(where.file, where.row, column), code, message))

    empty = [column for column in required if cells.get(column, "") == ""]
    for column in empty:
        problem(column, "empty-cell", "required cell is empty")
    template_id = None
    if cells.get(id_column, ""):
        try:
            template_id = int(cells[id_column])
        except ValueError:
            problem(id_column, "bad-id", f"template ID {cells[id_column]!r} is not a whole number")
    parsed: dict[str, dict] = {}
    for column, parse in declarations.items():
        try:
            parsed[column] = parse(cells.get(column, ""))
        except ValueError as exc:
            problem(column, "bad-declaration", str(exc))
            parsed[column] = {}
    return (None if empty else template_id), parsed


def _row_key(row: dict[str, str]) -> str:
    return f"{row.get('Category', '').strip()}|{row.get('ID', '').strip()}|{row.get('version', '').strip()}"


def load_kobbq_templates(path: Path, corrections: list[Correction] | None = None,
                         separators: tuple[str, ...] = DEFAULT_SEPARATORS, allowed: str = "") -> LoadedTemplates:
    """Load a KoBBQ-format TSV: corrections, then the text check and normalisation (``core.text``), then parsing.
    Missing columns are fatal (nothing else can be checked); every other problem is a finding."""
    header, rows, numbers = read_tsv(path)
    if missing := [c for c in REQUIRED_COLUMNS if c not in header]:
        raise UserError(f"missing required column(s): {', '.join(missing)}; "
                        f"a KoBBQ template file needs {', '.join(REQUIRED_COLUMNS)}", path)
    applied = apply_corrections(rows, numbers, [_row_key(r) for r in rows], path, corrections or [])
    findings: list[Finding] = []
    normalisations: list[NormalisationRecord] = []
    templates = []
    for row, number in zip(rows, numbers):
        row_key = _row_key(row)
        for column, value in row.items():
            findings += check_text(value, Location(str(path), number, column), allowed)
            row[column], change = normalise_text(value, allowed)
            normalisations += [NormalisationRecord(number, row_key, column, what) for what, changed in (
                ("control character", change.control_characters), ("NFC", change.nfc_changed),
                ("whitespace", change.whitespace_changed)) if changed]
        template = _build_template(path, number, row, findings, separators)
        if template is not None:
            templates.append(template)
    return LoadedTemplates(path, templates, findings, applied, normalisations, header)


def _build_template(path: Path, number: int, row: dict[str, str], findings: list[Finding],
                    separators: tuple[str, ...]) -> TemplateRow | None:
    template_id, declared = checked_row(Location(str(path), number), row, REQUIRED_CELLS, "ID", {
        column: lambda text: parse_declarations(text, separators) for column in ("Names", "Lexical_diversity")},
        findings)
    if template_id is None:
        return None
    return TemplateRow(
        source=str(path), row=number, category=row["Category"], template_id=template_id,
        version=row["version"], label=row["Label_annotation"], stereotype=row["Stereotype"],
        texts={name: row[column] for name, column in TEXT_COLUMNS.items()},
        names=declared["Names"], lexical=declared["Lexical_diversity"],
        target_group=row.get("Target_group", ""),
        bbq_id="" if row.get("BBQ_id", "") == NOT_APPLICABLE else row.get("BBQ_id", ""),
        bbq_category="" if row.get("BBQ_category", "") == NOT_APPLICABLE else row.get("BBQ_category", ""),
        columns=dict(row), separators=separators,
    )


