"""Import of the post-edited workbooks as template rows of the profile's format, and the post-edit report. Each cell is
normalised, the particle shorthand (``[N1]은``) expanded, and the rows checked as the build will read them before they
are published, each problem at the workbook cell its text came from. The twin's drafts take the same path."""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from core.decisions import Decision, template_subject
from core.errors import Location, UserError
from core.findings import Finding
from core.profile import Profile, WorkbookFormat
from core.tables import write_tsv_rows
from core.text import allowed_characters, normalise_text
from core.workbooks import save_workbook, table_workbook
from tasks.templates.load import ST
from tasks.templates.slots import SlotSyntaxError, find_inline_slots, parse_declarations
from tasks.templates.validate import template_format
from tasks.templates.versions import partner_version
from tasks.translation.glossary import Glossary
from tasks.translation.particles import Shorthand, expand_shorthand
from tasks.translation.pretranslate import FIELD_ORDER, LIST_FIELDS
from tasks.translation.workbook import EditedCell, FOLLOWS, clean_text, read_workbook

STAGE = "postedit"
OUTPUT_COLUMNS = ["Category", "ID", "version", "Label_annotation",
                  *[c for column in FIELD_ORDER for c in (column, f"{column}_translated")],
                  "N1_info", "N2_info", "Target_group", "BBQ_id", "BBQ_category", "Translator_notes"]


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


SLOT_FIELDS = [c for c in FIELD_ORDER if c not in LIST_FIELDS and c != "Stereotype"]  # texts that carry slots


def grouped_cells(cells: list[EditedCell], fields: list[str]) -> dict[str, dict[str, EditedCell]]:
    """Returned cells by template row (``Category|ID|version``) and field; a row lacking a field is an error."""
    grouped: dict[str, dict[str, EditedCell]] = defaultdict(dict)
    for cell in cells:
        grouped[f"{cell.category}|{cell.row.template_id}|{cell.row.version}"][cell.row.field] = cell
    for key, by_field in grouped.items():
        if missing := [f for f in fields if f not in by_field]:
            raise UserError(f"template row {key} lacks field(s) {', '.join(missing)}",
                            next(iter(by_field.values())).where)
    return grouped


def rows_from_cells(cells: list[EditedCell], profile: Profile, use_draft: bool = False
                    ) -> tuple[list[dict[str, str]], dict[tuple[str, str], Location], list[Finding], list[Exchange]]:
    """KoBBQ rows from returned cells (or the twin's drafts), where each (row key, column) came from, the findings so
    far, and the version exchanges the translator marked (those rows are checked against each other's English)."""
    findings: list[Finding] = []
    shorthand, separators, allowed = Shorthand.of(profile), profile.templates.separators, allowed_characters(profile)
    edited = grouped_cells(cells, FIELD_ORDER)
    rows, origin = [], {}
    for key, by_field in edited.items():
        first = next(iter(by_field.values()))
        texts = {}
        origin[(key, "")] = by_field["Stereotype"].where  # for problems of the row as a whole
        for column in FIELD_ORDER:
            cell = by_field[column]
            origin[(key, column)] = cell.where
            texts[column] = clean_text(cell.row.draft if use_draft else cell.postedit, cell.where, findings, allowed)
        declared: dict[str, tuple[str, ...]] = {}
        for column in LIST_FIELDS:
            try:
                declared.update(parse_declarations(texts[column], separators))
            except SlotSyntaxError as exc:
                findings.append(Finding("error", by_field[column].where, "bad-declaration", str(exc)))
        for column in SLOT_FIELDS:
            expanded = expand_shorthand(texts[column], declared, shorthand)
            texts[column] = expanded.text
            findings.extend(Finding("error", by_field[column].where, "slot-undeclared", p) for p in expanded.problems)
        notes = "; ".join(by_field[c].notes.strip() for c in FIELD_ORDER if by_field[c].notes.strip())
        rows.append({"Category": first.category, "ID": str(first.row.template_id), "version": first.row.version,
                     "Label_annotation": first.row.label, **texts, "Target_group": "", "BBQ_id": first.row.bbq_id,
                     "BBQ_category": first.row.bbq_category,
                     "Translator_notes": clean_text(notes, by_field["Stereotype"].where, findings, allowed)})
    exchanges, follows_key = ([], {}) if use_draft else marked_exchanges(edited, profile, findings)
    for row in rows:
        key = row_key(row)
        english = edited[follows_key.get(key, key)]
        row.update({f"{column}_translated": english[column].row.english for column in FIELD_ORDER})
        for column in SLOT_FIELDS:
            findings.extend(missing_slots(edited[key][column], row[column], english[column].row.english))
        if profile.templates.meaning(row["Label_annotation"]) == ST:
            for column in LIST_FIELDS:
                findings.extend(item_counts(edited[key][column], row[column], english[column].row.english, separators))
    return rows, origin, findings, exchanges


def row_key(row: dict[str, str]) -> str:
    return f"{row['Category']}|{row['ID']}|{row['version']}"


@dataclass(frozen=True)
class Exchange:
    """Two versions of a template whose post-edits the translator exchanged, as the version check asks."""

    category: str
    template_id: str
    versions: tuple[str, str]
    where: Location


def marked_exchanges(edited: dict[str, dict[str, EditedCell]], profile: Profile, findings: list[Finding]
                     ) -> tuple[list[Exchange], dict[str, str]]:
    """The exchanges marked: each row's ``Follows_version`` names the English version its post-edit translates (its own
    or its partner's); marked on one row only is an error. Returns them, and per exchanged row the key it follows."""
    swapped: dict[str, str] = {}
    for key, by_field in edited.items():
        mark = by_field.get(FOLLOWS)
        if mark is None:
            continue
        own, written = mark.row.version, normalise_text(mark.postedit)[0]
        partner = partner_version(own, profile)
        partner_key = f"{mark.category}|{mark.row.template_id}|{partner}"
        if written == partner and partner_key in edited:
            swapped[key] = partner_key
        elif written != own:
            findings.append(Finding("error", mark.where, "follows-version",
                                    f"{key}: {FOLLOWS} is {written!r}; write {own!r} (this row translates version "
                                    f"{own}'s English) or, where you exchanged the rows of versions {own} and "
                                    f"{partner}, {partner!r}"))
    exchanges = []
    for key, partner_key in swapped.items():
        mark = edited[key][FOLLOWS]
        other = edited[partner_key][FOLLOWS].row.version
        if swapped.get(partner_key) != key:
            findings.append(Finding("error", mark.where, "version-exchange",
                                    f"{key}: {FOLLOWS} says this row's post-edit is version {other}'s, but version "
                                    f"{other}'s row does not say it is this one's; to exchange two versions, exchange "
                                    f"every Post-edit cell of both rows, {FOLLOWS} included"))
        elif mark.row.version < other:
            exchanges.append(Exchange(mark.category, str(mark.row.template_id), (mark.row.version, other), mark.where))
    return exchanges, {key: other for key, other in swapped.items() if swapped.get(other) == key}


def item_counts(cell: EditedCell, text: str, english: str, separators: tuple[str, ...]) -> list[Finding]:
    """A simply-transferred template's lists are translated item by item: each slot of the post-edit has as many items
    as in the English it follows ("N1: [หลานชาย หลานสาว]" for "N1: [grandson, granddaughter]" is one item)."""
    try:
        written, source = parse_declarations(text, separators), parse_declarations(english)
    except SlotSyntaxError:
        return []  # reported where the cell was read
    return [Finding("error", cell.where, "slot-count",
                    f"slot {name} has {len(items)} item(s), and the English it translates {len(source[name])} "
                    f"({', '.join(source[name])}): a simply-transferred template translates every item; separate "
                    f"the items with {separators[0]!r}")
            for name, items in written.items() if name in source and len(items) != len(source[name])]


def missing_slots(cell: EditedCell, text: str, english: str) -> list[Finding]:
    """Every slot of the English text the row follows must be in the post-edit: a lost [N2] loses a person."""
    lost = {slot.name for slot in find_inline_slots(english)} - {slot.name for slot in find_inline_slots(text)}
    return [Finding("error", cell.where, "slot-missing",
                    f"slot [{name}] of the English text is missing from the post-edit (to exchange two versions, as "
                    f"the version check asks, exchange every Post-edit cell of both rows, {FOLLOWS} included, not "
                    "some)")
            for name in sorted(lost)]


def moved(finding: Finding, key: str, column: str, origin: dict[tuple[str, str], Location]) -> Finding:
    """A finding of the template validation at the post-edit cell its text came from (else its row's first)."""
    where = origin.get((key, column), origin.get((key, "")))
    return Finding(finding.severity, where or finding.where, finding.code,
                   f"{key}: {finding.message}" if key else finding.message)


def write_tsv(rows: list[dict[str, str]], path: Path) -> dict[tuple[str, int], str]:
    """The rows as a KoBBQ TSV at ``path``; returns (file name, line) -> row key."""
    write_tsv_rows(path, OUTPUT_COLUMNS, rows)
    return {(path.name, number): row_key(row) for number, row in enumerate(rows, start=2)}


def write_checked(write: Callable[[Path], dict[tuple[str, int], str]], out: Path, profile: Profile,
                  origin: dict[tuple[str, str], Location], earlier: list[Finding]) -> list[Finding]:
    """Write a staging copy of ``out`` (``write`` returns each (file name, row)'s row key), validate it as the build
    will read it, findings moved to the post-edit cells their text came from, and publish it only when neither this nor
    ``earlier`` has an error. It runs anyway, so one import reports every problem (a cell's once)."""
    staging = out.with_name(f".{out.name}.{os.getpid()}.staging")
    names = {sheet: name for name, sheet in sheet_columns(profile).items()} if profile.templates.workbook else {}
    seen = {(f.where, f.code) for f in earlier}
    shutil.rmtree(staging, ignore_errors=True)
    try:
        keys, fmt = write(staging), template_format(profile)
        findings = []
        for finding in fmt.check(fmt.load(staging, profile, []), profile):
            column = finding.where.column or ""
            key = keys.get((Path(finding.where.file).name, finding.where.row or 0), "")
            found = moved(finding, key, names.get(column, column), origin)
            if finding.code != "not-nfc" and (found.where, found.code) not in seen:  # not-nfc: normalised on import
                findings.append(found)
        if not any(f.severity == "error" for f in [*earlier, *findings]):
            _publish(staging, out)
        return findings
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # a folder (workbooks)
        staging.unlink(missing_ok=True)  # a file (TSV)


def edit_rates(cells: list[EditedCell]) -> tuple[list[EditRate], list[EditRate]]:
    """Per template (``<Category>|<ID>``) and per category: characters changed / draft characters."""
    per_template: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for cell in cells:
        draft, edited = normalise_text(cell.row.draft)[0], normalise_text(cell.postedit)[0]
        changed = Levenshtein.distance(draft, edited)  # characters inserted, deleted or substituted
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
                 use_draft: bool = False, vocabulary: Path | None = None,
                 groups: Mapping[str, Mapping[str, str]] | None = None) -> ImportResult:
    """Rows, checks, the template file (only without errors: a KoBBQ TSV, or a workbook format's folder with the
    vocabulary copied from ``vocabulary``), edit rates, substitutions and their decisions. ``groups``: per row key, the
    twin's N1_info, N2_info and Target_group from BBQ (a post-edit gets its groups at the templates stage)."""
    exchanges: list[Exchange] = []
    if profile.templates.workbook is not None:
        rows, origin, findings = workbook_rows(cells, profile, use_draft)
        if not any(f.severity == "error" for f in findings):
            write = partial(write_category_workbooks, rows, profile=profile, vocabulary=vocabulary or out_path.parent)
            findings += write_checked(write, out_path, profile, origin, findings)
    else:
        rows, origin, findings, exchanges = rows_from_cells(cells, profile, use_draft)
        for row in rows:
            row.update((groups or {}).get(row_key(row), {}))
        order = {name: i for i, name in enumerate(profile.category_names)}
        rows.sort(key=lambda r: (order.get(r["Category"], len(order)), int(r["ID"]), r["version"]))
        findings += write_checked(partial(write_tsv, rows), out_path, profile, origin, findings)
    written = out_path if not any(f.severity == "error" for f in findings) and out_path.exists() else None
    texts = [cell for cell in cells if cell.row.field != FOLLOWS]
    template_rates, category_rates = edit_rates(texts) if not use_draft else ([], [])
    substitutions = cultural_substitutions(texts, glossary) if not use_draft else []
    decisions = postedit_decisions(cells, template_rates, substitutions, findings, written is not None,
                                   profile.culture.name) + exchange_decisions(exchanges if written else [])
    return ImportResult(rows if written else [], written, decisions, findings, template_rates, category_rates,
                        substitutions)


def exchange_decisions(exchanges: list[Exchange]) -> list[Decision]:
    """The versions a translator exchanged, so that "why does version a hold BBQ's version b?" has an answer."""
    return [Decision(STAGE, "template", template_subject(e.category, e.template_id), "version-exchange",
                     f"{e.versions[0]}<->{e.versions[1]}",
                     f"the translator exchanged versions {e.versions[0]} and {e.versions[1]} ({FOLLOWS} of each row "
                     f"names the other): each row's post-edit follows the other's English (its slots, field by field), "
                     f"as the version convention asks where BBQ's version {e.versions[0]} carries the biased context; "
                     "each row records the English it follows", {"versions": list(e.versions)}, source=e.where.file)
            for e in exchanges]


def postedit_decisions(cells: list[EditedCell], rates: list[EditRate], substitutions: list[tuple[str, str, str]],
                       findings: list[Finding], written: bool, culture: str) -> list[Decision]:
    sources = {template_subject(c.category, c.row.template_id): (c.where.file, c.row) for c in cells}
    subject_at = {c.where: template_subject(c.category, c.row.template_id) for c in cells}
    errors_at = Counter(subject_at[f.where] for f in findings if f.severity == "error" and f.where in subject_at)
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


def import_postedit(workbook_paths: list[Path], profile: Profile, out_path: Path, glossary: Glossary,
                    sent: Path | None = None) -> ImportResult:
    """Read every returned workbook (a workbook format's vocabulary beside them) and write ``out_path`` when nothing is
    wrong. ``sent``: the workbooks the current pre-translation exported, whose drafts the returned ones should hold."""
    cells = [cell for path in workbook_paths for cell in read_workbook(Path(path), profile)]
    if not cells:
        raise UserError("no workbook rows to import")
    result = import_cells(cells, Path(out_path), profile, glossary, vocabulary=Path(workbook_paths[0]).parent)
    current = [Path(sent) / Path(path).name for path in workbook_paths] if sent else []
    result.findings += stale_drafts(cells, [cell for path in current if path.exists()
                                            for cell in read_workbook(path, profile)])
    return result


def stale_drafts(cells: list[EditedCell], current: list[EditedCell]) -> list[Finding]:
    """One warning per returned workbook whose DeepL drafts are not those of the current pre-translation's exported
    cells (``current``): its edit rates measure the post-edit against the older drafts it holds."""
    now = {(c.category, c.row.template_id, c.row.version, c.row.field): c.row.draft for c in current}
    stale: dict[str, list[EditedCell]] = defaultdict(list)
    for cell in cells:
        draft = now.get((cell.category, cell.row.template_id, cell.row.version, cell.row.field), cell.row.draft)
        if draft != cell.row.draft:
            stale[cell.where.file].append(cell)
    return [Finding("warning", replace(found[0].where, column="DeepL draft"), "stale-drafts",
                    f"{len(found)} DeepL draft(s) of this workbook differ from the current pre-translation's (the "
                    f"first: template {found[0].row.template_id}{found[0].row.version}, {found[0].row.field}): it was "
                    "exported from an earlier pre-translation, and its edit rates measure the post-edit against the "
                    "drafts it holds; export the workbooks again if the new drafts should be post-edited")
            for found in stale.values()]


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
    warnings = [f"- {f.render()}" for f in result.findings if f.severity == "warning"]
    return "\n".join(lines + (["", "## Warnings", "", *warnings] if warnings else [])) + "\n"


SHEET = "Sheet1"  # as the EsBBQ templates name their sheet; the loader reads the first sheet


def sheet_columns(profile: Profile) -> dict[str, str]:
    """Language-selected column -> sheet column, in sheet order: IDs, links, translated fields, translator's cells."""
    fmt: WorkbookFormat = profile.templates.workbook  # type: ignore[assignment]  (a workbook format's)
    suffix = f"_{profile.language}"
    fixed = [fmt.label_column, fmt.bbq_id_column, fmt.id_column, "version", fmt.bbq_category_column,
             fmt.category_column]
    columns = {name: name for name in fixed}
    columns.update({name: name + suffix for name in profile.translation.fields.values()})
    columns.update({c.name: c.name + (suffix if c.per_language else "") for c in profile.translation.row_cells})
    return columns


def workbook_rows(cells: list[EditedCell], profile: Profile, use_draft: bool = False
                  ) -> tuple[list[dict[str, str]], dict[tuple[str, str], Location], list[Finding]]:
    """Template rows (language-selected column -> text) in export order, where each cell came from, the findings."""
    fmt: WorkbookFormat = profile.templates.workbook  # type: ignore[assignment]  (a workbook format's)
    spelled = {bbq: own for own, bbq in fmt.bbq_category_names.items()}  # Gender_identity -> GenderIdentity
    expected = [*profile.translation.fields.values(), *(c.name for c in profile.translation.row_cells)]
    rows, origin, findings, allowed = [], {}, [], allowed_characters(profile)
    for key, by_field in grouped_cells(cells, expected).items():
        first = next(iter(by_field.values()))
        origin[(key, "")] = first.where
        row = {fmt.label_column: first.row.label, fmt.bbq_id_column: first.row.bbq_id,
               fmt.id_column: str(first.row.template_id), "version": first.row.version,
               fmt.bbq_category_column: spelled.get(first.row.bbq_category, first.row.bbq_category),
               fmt.category_column: first.category}
        for column in expected:
            cell = by_field[column]
            origin[(key, column)] = cell.where
            row[column] = clean_text(cell.row.draft if use_draft else cell.postedit, cell.where, findings, allowed)
        rows.append(row)
    return rows, origin, findings


def write_category_workbooks(rows: list[dict[str, str]], folder: Path, profile: Profile, vocabulary: Path
                             ) -> dict[tuple[str, int], str]:
    """One ``<Category>.xlsx`` per category and the vocabulary, in a new ``folder``; returns (file, row) -> row key."""
    fmt: WorkbookFormat = profile.templates.workbook  # type: ignore[assignment]  (a workbook format's)
    folder.mkdir(parents=True)
    copy_vocabulary(vocabulary, folder, fmt)
    columns = sheet_columns(profile)
    by_category: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_category[row[fmt.category_column]].append(row)
    keys: dict[tuple[str, int], str] = {}
    for category in profile.category_names:
        if not by_category.get(category):
            continue
        cells = [[int(row[c]) if c == fmt.id_column else row.get(c, "") for c in columns]
                 for row in by_category[category]]
        save_workbook(table_workbook({SHEET: [list(columns.values()), *cells]}), folder / f"{category}.xlsx")
        keys.update({(f"{category}.xlsx", number): f"{category}|{row[fmt.id_column]}|{row['version']}"
                     for number, row in enumerate(by_category[category], start=2)})
    return keys


def copy_vocabulary(vocabulary: Path, folder: Path, fmt: WorkbookFormat) -> None:
    """The vocabulary and proper-name workbooks, which the generator needs beside the templates."""
    for name in (fmt.vocabulary, fmt.proper_names):
        source = Path(vocabulary) / name
        if not source.exists():
            raise UserError(f"{name} is missing: the template workbooks need the culture's vocabulary beside them; "
                            "put vocabulary.xlsx and vocabulary_proper_names.xlsx beside the returned workbooks",
                            source)
        shutil.copyfile(source, folder / name)


def _publish(staging: Path, out: Path) -> None:
    """Replace ``out`` by ``staging`` (a folder with two renames): a reader sees the old one or the new one."""
    retired = out.with_name(f".{out.name}.retired")
    shutil.rmtree(retired, ignore_errors=True)
    if staging.is_dir() and out.exists():
        out.rename(retired)
    staging.replace(out)
    shutil.rmtree(retired, ignore_errors=True)
