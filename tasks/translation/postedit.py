"""Import of the post-edited workbooks into KoBBQ-format template rows, and the post-edit report.

Each returned cell is normalised (NFC, whitespace), the particle shorthand ``[N1]은`` is
expanded from the row's ``Names``/``Lexical_diversity``, and the rows are written as a
KoBBQ-format TSV that ``tasks.templates.load_kobbq_templates`` reads. The TSV is checked
with the project's own template validation (``tasks.templates.validate``) before it is published;
each problem is reported at its workbook cell (file, sheet, row, column). With any error
nothing is written.

The same path turns the unedited DeepL drafts into the machine-translated twin
(``mtBBQ_templates.tsv``) for the paper's KoBBQ-vs-machine-translation comparison.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.atomic import replacing
from core.decisions import Decision, template_subject
from core.findings import Finding
from tasks.templates.slots import SlotSyntaxError, find_inline_slots, normalise_text, parse_declarations
from tasks.templates.load import load_kobbq_templates
from tasks.translation.glossary import EMPTY_GLOSSARY, Glossary
from tasks.translation.particles import Shorthand, expand_shorthand
from tasks.translation.pretranslate import FIELD_ORDER, LIST_FIELDS, Draft
from tasks.translation.template_workbooks import workbook_rows, write_checked_workbooks
from tasks.translation.workbook import EditedCell, clean_text, export_rows, read_workbook
from tasks.templates.validate_kobbq import validate_loaded

STAGE = "postedit"
OUTPUT_COLUMNS = [
    "Category", "ID", "version", "Label_annotation",
    *[c for column in FIELD_ORDER for c in (column, f"{column}_translated")],
    "Target_group", "BBQ_id", "BBQ_category", "Translator_notes",
]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance in characters (insert, delete, substitute each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class EditRate:
    """How much the human edit changed the draft: edit distance / draft length (HTER-like, in characters)."""

    subject: str
    changed: int
    draft_characters: int

    @property
    def rate(self) -> float:
        return self.changed / self.draft_characters if self.draft_characters else 0.0


@dataclass
class ImportResult:
    rows: list[dict[str, str]]
    tsv_path: Path | None  # None when errors kept the file from being written
    decisions: list[Decision]
    findings: list[Finding]
    template_rates: list[EditRate] = field(default_factory=list)
    category_rates: list[EditRate] = field(default_factory=list)
    substitutions: list[tuple[str, str, str]] = field(default_factory=list)  # (subject, source, target)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


def rows_from_cells(cells: list[EditedCell], profile: Profile, use_draft: bool = False
                    ) -> tuple[list[dict[str, str]], dict[tuple[str, str], Location], list[Finding]]:
    """KoBBQ rows from returned cells (or from the drafts alone, for the machine-translated twin).

    Returns the rows, where each (row key, column) came from, and the findings so far.
    """
    findings: list[Finding] = []
    shorthand, separators = Shorthand.of(profile), profile.templates.separators
    grouped: dict[tuple[str, int, str], dict[str, EditedCell]] = defaultdict(dict)
    for cell in cells:
        grouped[(cell.category, cell.row.template_id, cell.row.version)][cell.row.field] = cell
    rows, origin = [], {}
    for (category, template_id, version), by_field in grouped.items():
        first = next(iter(by_field.values())).row
        key = f"{category}|{template_id}|{version}"
        missing = [f for f in FIELD_ORDER if f not in by_field]
        if missing:
            raise UserError(f"template row {key} lacks field(s) {', '.join(missing)}",
                            next(iter(by_field.values())).where)
        texts = {}
        origin[(key, "")] = by_field["Stereotype"].where  # for problems of the row as a whole
        for column in FIELD_ORDER:
            cell = by_field[column]
            origin[(key, column)] = cell.where
            texts[column] = clean_text(cell.row.draft if use_draft else cell.postedit, cell.where, findings)
        declared: dict[str, tuple[str, ...]] = {}
        for column in LIST_FIELDS:
            try:
                declared.update(parse_declarations(texts[column], separators))
            except SlotSyntaxError as exc:
                findings.append(Finding("error", by_field[column].where, "bad-declaration", str(exc)))
        row = {"Category": category, "ID": str(template_id), "version": version, "Label_annotation": first.label}
        for column in FIELD_ORDER:
            if column not in LIST_FIELDS and column != "Stereotype":
                expanded = expand_shorthand(texts[column], declared, shorthand)
                texts[column] = expanded.text
                findings.extend(Finding("error", by_field[column].where, "slot-undeclared", p)
                                for p in expanded.problems)
                findings.extend(missing_slots(by_field[column], texts[column]))
            row[column] = texts[column]
            row[f"{column}_translated"] = by_field[column].row.english
        notes = "; ".join(by_field[c].notes.strip() for c in FIELD_ORDER if by_field[c].notes.strip())
        row.update({"Target_group": "", "BBQ_id": first.bbq_id, "BBQ_category": first.bbq_category,
                    "Translator_notes": clean_text(notes, by_field["Stereotype"].where, findings)})
        rows.append(row)
    return rows, origin, findings


def missing_slots(cell: EditedCell, text: str) -> list[Finding]:
    """Every slot of the English text must be in the post-edit: a lost [N2] loses a person."""
    english = {slot.name for slot in find_inline_slots(cell.row.english)}
    present = {slot.name for slot in find_inline_slots(text)}
    return [Finding("error", cell.where, "slot-missing",
                    f"slot [{name}] of the English text is missing from the post-edit") for name in sorted(english - present)]


def write_tsv_atomic(rows: list[dict[str, str]], path: Path) -> None:
    """Write next to the target and rename, so a reader never sees half a file."""
    with replacing(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as out:
        # No quoting: template text has quotes, and the loader reads with QUOTE_NONE.
        out.write("\t".join(OUTPUT_COLUMNS) + "\n")
        for row in rows:
            values = [row.get(c, "") for c in OUTPUT_COLUMNS]
            bad = next((v for v in values if "\t" in v or "\n" in v or "\r" in v), None)
            if bad is not None:
                raise UserError(f"cannot write a tab or line break into a TSV cell: {bad[:60]!r}", path)
            out.write("\t".join(values) + "\n")


def sort_rows(rows: list[dict[str, str]], profile: Profile) -> list[dict[str, str]]:
    order = {name: i for i, name in enumerate(profile.category_names)}
    return sorted(rows, key=lambda r: (order.get(r["Category"], len(order)), int(r["ID"]), r["version"]))


def _checked_write(rows: list[dict[str, str]], origin: dict[tuple[str, str], Location], path: Path,
                   profile: Profile) -> list[Finding]:
    """Validate the rows as the build will read them; publish only when there is no error.

    Each finding of the template validation is moved to the workbook cell the text came from.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".check.tsv")
    os.close(handle)
    try:
        write_tsv_atomic(rows, Path(temp))
        loaded = load_kobbq_templates(Path(temp), separators=profile.templates.separators)
        keys = {number: f"{r['Category']}|{r['ID']}|{r['version']}" for number, r in enumerate(rows, start=2)}
        findings = []
        for finding in validate_loaded(loaded, profile):
            if finding.code == "not-nfc":  # the import normalised it already
                continue
            key = keys.get(finding.where.row or 0, "")
            where = origin.get((key, finding.where.column or ""), origin.get((key, "")))
            findings.append(Finding(finding.severity, where, finding.code, f"{key}: {finding.message}"))
        if not any(f.severity == "error" for f in findings):
            os.replace(temp, path)
        return findings
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def edit_rates(cells: list[EditedCell]) -> tuple[list[EditRate], list[EditRate]]:
    """Per template (``<Category>|<ID>``) and per category: characters changed / draft characters."""
    per_template: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for cell in cells:
        draft, edited = normalise_text(cell.row.draft)[0], normalise_text(cell.postedit)[0]
        changed = edit_distance(draft, edited)
        for bucket, key in ((per_template, template_subject(cell.category, cell.row.template_id)),
                            (per_category, cell.category)):
            bucket[key][0] += changed
            bucket[key][1] += len(draft)
    return ([EditRate(k, *v) for k, v in sorted(per_template.items())],
            [EditRate(k, *v) for k, v in sorted(per_category.items())])


def cultural_substitutions(cells: list[EditedCell], glossary: Glossary) -> list[tuple[str, str, str]]:
    """Glossary terms of the English source whose substitute is in the post-edit: (subject, source, target)."""
    found = set()
    for cell in cells:
        for entry in glossary.terms_in(cell.row.english):
            if entry.target in cell.postedit:
                found.add((template_subject(cell.category, cell.row.template_id), entry.source, entry.target))
    return sorted(found)


def import_cells(cells: list[EditedCell], out_path: Path, profile: Profile, glossary: Glossary,
                 use_draft: bool = False, vocabulary: Path | None = None) -> ImportResult:
    """Rows, checks, the template file (only without errors), edit rates, substitutions and their decisions.

    The profile's template format decides what is written: a KoBBQ TSV at ``out_path``, or (a workbook
    format) the folder ``out_path`` of template workbooks, with the vocabulary copied from ``vocabulary``.
    """
    if profile.templates.workbook is not None:
        rows, origin, findings = workbook_rows(cells, profile, use_draft)
        if not any(f.severity == "error" for f in findings):
            findings += write_checked_workbooks(rows, origin, out_path, profile, vocabulary or out_path.parent)
    else:
        rows, origin, findings = rows_from_cells(cells, profile, use_draft)
        rows = sort_rows(rows, profile)
        if not any(f.severity == "error" for f in findings):
            findings += _checked_write(rows, origin, out_path, profile)
    written = out_path if not any(f.severity == "error" for f in findings) and out_path.exists() else None
    template_rates, category_rates = edit_rates(cells) if not use_draft else ([], [])
    substitutions = cultural_substitutions(cells, glossary) if not use_draft else []
    decisions = postedit_decisions(cells, template_rates, substitutions, findings, written is not None,
                                   profile.culture.name)
    return ImportResult(rows if written else [], written, decisions, findings, template_rates, category_rates,
                        substitutions)


def postedit_decisions(cells: list[EditedCell], rates: list[EditRate], substitutions: list[tuple[str, str, str]],
                       findings: list[Finding], written: bool, culture: str) -> list[Decision]:
    sources = {template_subject(c.category, c.row.template_id): (c.where.file, c.row) for c in cells}
    subject_at = {c.where: template_subject(c.category, c.row.template_id) for c in cells}
    errors_at: dict[str, int] = defaultdict(int)
    for f in findings:
        if f.severity == "error" and f.where in subject_at:
            errors_at[subject_at[f.where]] += 1
    decisions = []
    for rate in rates:
        file, row = sources[rate.subject]
        errors = errors_at.get(rate.subject, 0)
        outcome = "imported" if written else "rejected"
        decisions.append(Decision(
            STAGE, "template", rate.subject, "postedit-import", outcome,
            f"post-edit of bbq:{row.bbq_category}:{row.bbq_id} changed {rate.changed} of {rate.draft_characters} "
            f"draft characters (edit rate {rate.rate:.3f}); {errors} error(s) in this template"
            + ("" if written else "; the import wrote nothing because of errors"),
            {"changed": rate.changed, "draft_characters": rate.draft_characters, "edit_rate": round(rate.rate, 4),
             "errors": errors, "bbq": f"bbq:{row.bbq_category}:{row.bbq_id}"}, source=file))
    by_subject: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for subject, source, target in substitutions:
        by_subject[subject].append((source, target))
    for subject, pairs in sorted(by_subject.items()):
        text = "; ".join(f"{a} -> {b}" for a, b in pairs)
        decisions.append(Decision(STAGE, "template", subject, "cultural-substitution", text,
                                  f"the post-edit adapts {len(pairs)} US-specific term(s) to {culture}: {text}",
                                  {"terms": dict(pairs)}, source=sources[subject][0]))
    return decisions


def import_postedit(workbook_paths: list[Path], profile: Profile, out_path: Path, glossary: Glossary) -> ImportResult:
    """Read every returned workbook and write ``out_path`` (the profile's template format) when nothing is wrong.

    A workbook format's vocabulary workbooks are taken from beside the returned workbooks.
    """
    cells = [cell for path in workbook_paths for cell in read_workbook(Path(path), profile)]
    if not cells:
        raise UserError("no workbook rows to import")
    return import_cells(cells, Path(out_path), profile, glossary, vocabulary=Path(workbook_paths[0]).parent)


def templates_output(profile: Profile, folder: Path, stem: str) -> Path:
    """Where an import writes: ``<stem>.tsv`` for KoBBQ's format, the folder ``<stem>`` of workbooks otherwise."""
    return Path(folder) / (stem if profile.templates.workbook is not None else f"{stem}.tsv")


def write_machine_translation(drafts: list[Draft], profile: Profile, labels: Mapping[str, str],
                              out_path: Path) -> ImportResult:
    """The unedited DeepL drafts as KoBBQ-format rows (``mtBBQ_templates.tsv``), checked like a post-edit.

    Expanding this file like the post-edited one gives the machine-translated twin release
    (``mtBBQ_*``) for the paper's KoBBQ-vs-machine-translation comparison.
    """
    cells = [EditedCell(row.category, row, row.draft, "", Location("DeepL draft", index + 1, row.field))
             for index, row in enumerate(export_rows(drafts, profile, labels))]
    return import_cells(cells, Path(out_path), profile, EMPTY_GLOSSARY, use_draft=True)


def render_report(result: ImportResult) -> str:
    """The post-edit report: edit rate per category and per template, and the cultural substitutions."""
    lines = ["# Post-edit report", "", "Edit rate = character edit distance between the DeepL draft and the "
             "post-edit / draft characters.", "", "| category | changed | draft characters | edit rate |",
             "|---|---:|---:|---:|"]
    lines += [f"| {r.subject} | {r.changed} | {r.draft_characters} | {r.rate:.3f} |" for r in result.category_rates]
    lines += ["", "| template | changed | draft characters | edit rate |", "|---|---:|---:|---:|"]
    lines += [f"| {r.subject} | {r.changed} | {r.draft_characters} | {r.rate:.3f} |" for r in result.template_rates]
    lines += ["", "## Cultural substitutions", ""]
    lines += [f"- {s}: {a} -> {b}" for s, a, b in result.substitutions] or ["- none"]
    return "\n".join(lines) + "\n"
