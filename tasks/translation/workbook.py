"""The post-edit workbook: one xlsx per category for the professional translator (``docs/new-culture.md`` 0.4).

Hidden, protected sheets keep a copy of the locked columns (``_manifest``: a changed ID or source text is refused)
and the profile it was exported for (``_export``)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path

from core.errors import Location, UserError
from core.findings import Finding
from core.profile import Profile
from core.text import check_text, normalise_text
from core.text_files import read_text
from tasks.templates.load import TEXT_COLUMNS
from tasks.translation.pretranslate import Draft, bbq_declarations, own_label
from core.workbooks import new_workbook, read_sheets, save_workbook, set_text, write_rows

SHEET = "templates"
MANIFEST = "_manifest"
EXPORT = "_export"  # hidden: which profile the workbook was exported for (workbooks before it have none)
INSTRUCTIONS = "Instructions"
LOCKED = ["ID", "version", "BBQ_category", "BBQ_id", "Label_annotation", "Field", "English", "DeepL draft"]
EDITABLE = ["Post-edit", "Notes"]
HEADER = LOCKED + EDITABLE
# A person slot as written in a text: bare ([N1]) or with its inline list ([N1: a, b]).
_PERSON_SLOT = re.compile(r"\[(N1|N2)(?=[:\]])")
# Columns whose text names the people; Names and Lexical_diversity declare the fillers and stay as they are.
SWAPPED_FIELDS = tuple(TEXT_COLUMNS.values())
WIDTHS = {"English": 60, "DeepL draft": 60, "Post-edit": 60, "Notes": 30, "Field": 26}
FOLLOWS = "Follows_version"  # the row whose Post-edit names the English version the row's texts translate


def neutral_instructions(profile: Profile) -> list[str]:
    """The Instructions without the profile's own file: the slot syntax in English, no language's example."""
    joiner = profile.templates.list_joiner
    lines = ["Post-edit the 'Post-edit' column (pre-filled with the DeepL draft). Only 'Post-edit' and 'Notes' can be "
             "edited.",
             "Do not add, remove or reorder rows; the import rejects a workbook whose IDs or locked columns changed.",
             "Save as .xlsx (not .xlsm).", ""]
    if profile.templates.workbook is None:
        lines += [f"Slots. Names declares the two people, each a list of interchangeable words: "
                  f"'N1: [word{joiner}word]; N2: [word{joiner}word]'.",
                  f"Lexical_diversity declares other interchangeable words the same way: 'W1: [word{joiner}word]'. "
                  "Keep every slot of the English text.",
                  f"In the text, write a slot bare ('[N1]') where its words fit the sentence as declared; the import "
                  f"writes the list. Where a word changes in the sentence, write the list yourself: "
                  f"'[N1: form{joiner}form]' (same order as Names).",
                  f"Separate the items of a list with {' or '.join(repr(s) for s in profile.templates.separators)}.",
                  ""]
    lines += [f"Cultural adaptation. Replace US-specific entities with ones familiar in {profile.culture.name}. The "
              "draft already applies the glossary; explain any further substitution in 'Notes'."]
    return lines


def version_lines(profile: Profile) -> list[str]:
    """The version convention (kobbq-process.md section 1), from the profile's versions: stated on every sheet of an
    explicit-versions format, because BBQ's own letters do not follow it and the import checks it."""
    counter, biased = profile.templates.counter_biased_versions, profile.templates.swapped_versions
    if profile.templates.workbook is not None or not counter:
        return []
    pairs = ", ".join(f"{a}/{b}" for a, b in zip(counter, biased))
    return [
        "",
        f"Versions ({pairs}). Version{'s' if len(counter) > 1 else ''} {', '.join(counter)} carr"
        f"{'y' if len(counter) > 1 else 'ies'} the counter-biased disambiguating context: the answer to the biased "
        "question is the person who is NOT of the target group.",
        f"Version{'s' if len(biased) > 1 else ''} {', '.join(biased)} carr{'y' if len(biased) > 1 else 'ies'} the "
        "biased one: the answer to the biased question is the person of the target group.",
        "BBQ's own letters do not always follow this. Where the English version a is the biased one, exchange the "
        "two versions' rows: every Post-edit cell",
        f"(contexts, questions, answers, Names, Lexical_diversity and {FOLLOWS}) of version a with the same field of "
        "version b, so that version a answers the biased question",
        f"with the non-target person; say so in Notes. {FOLLOWS} names the English version a row's Post-edit "
        "translates: exchanged with the rest, it tells the import which rows you exchanged.",
        "This works whether the two versions differ by their Names (most templates) or by their texts. The groups "
        "file (N1_info, N2_info, Target_group) is checked against this, row by row: exchange its two rows too.",
    ]


def workbook_category(bbq_category: str, profile: Profile) -> str:
    """The adapted category a BBQ category feeds (Race_ethnicity and Nationality -> Race_ethnicity_nationality)."""
    for category in profile.categories:
        if bbq_category in category.bbq_categories:
            return category.name
    raise UserError(f"BBQ category {bbq_category!r} feeds no category of profile {profile.name!r}")


@dataclass(frozen=True)
class ExportRow:
    category: str
    template_id: int
    version: str
    bbq_category: str
    bbq_id: str
    label: str
    field: str
    english: str
    draft: str

    def locked(self) -> list[object]:
        return [self.template_id, self.version, self.bbq_category, self.bbq_id, self.label, self.field,
                self.english, self.draft]


def swap_person_slots(text: str) -> str:
    """``[N1]`` <-> ``[N2]`` (bare or with an inline list): the same sentence with the two people's roles exchanged."""
    return _PERSON_SLOT.sub(lambda m: "[N2" if m.group(1) == "N1" else "[N1", text)


def swapped_version(rows: list[ExportRow], version: str) -> list[ExportRow]:
    """The partner version b of a template's only row, N1 and N2 swapped in every text. Why: KoBBQ needs versions a and
    b, but BBQ files without a version column hold one row per template (BBQ's generator swapped the names itself).
    Names and Lexical_diversity stay: swapping them too would swap the people back."""
    return [replace(row, version=version,
                    english=swap_person_slots(row.english) if row.field in SWAPPED_FIELDS else row.english,
                    draft=swap_person_slots(row.draft) if row.field in SWAPPED_FIELDS else row.draft)
            for row in rows]


def row_version(draft: Draft, position: int, rows: int, profile: Profile) -> str:
    """KoBBQ's explicit versions: a, b, c, d in file order where BBQ has none. A generated-flips format keeps BBQ's
    version where it is one of the format's and the template has several rows, else none."""
    version = draft.template.version
    if profile.templates.swapped_versions:
        return version or "abcd"[position]
    return version if rows > 1 and version in profile.templates.versions else ""


def people_swapped(draft: Draft, other: Draft) -> bool:
    """Whether ``draft`` is ``other`` with the two people exchanged: the same texts and words, the NAME1 and NAME2 lists
    swapped (BBQ's version b of 50 templates)."""
    mine, theirs = dict(bbq_declarations(draft.template.names)), dict(bbq_declarations(other.template.names))
    return (bool(mine) and draft.template.texts == other.template.texts
            and draft.template.lexical == other.template.lexical
            and mine.get("N1") == theirs.get("N2") and mine.get("N2") == theirs.get("N1"))


def rows_to_translate(drafts: list[Draft], profile: Profile) -> list[Draft]:
    """A template's BBQ rows for the translator. A format whose generator flips the people itself (no
    ``swapped_versions``: EsBBQ) needs no row that only exchanges them: EsBBQ made one row of BBQ's SES 1 a/b."""
    if profile.templates.swapped_versions:
        return drafts
    kept: list[Draft] = []
    for draft in drafts:
        if not any(people_swapped(draft, earlier) for earlier in kept):
            kept.append(draft)
    return kept


def draft_rows(draft: Draft, profile: Profile) -> list[tuple[str, str, str]]:
    """(field, English, draft) of one BBQ row: its translated fields under the target format's names, then the cells the
    translator fills (English: BBQ's own column, where it has one)."""
    names = profile.translation.fields
    rows = [(names.get(f.column, f.column), f.english, f.draft or "") for f in draft.fields]
    return rows + [(c.name, draft.template.columns.get(c.bbq_column, "") if c.bbq_column else "", "")
                   for c in profile.translation.row_cells]


def export_rows(drafts: list[Draft], profile: Profile, labels: Mapping[str, str]) -> list[ExportRow]:
    """Number the templates per adapted category (BBQ file order, then Q_id) and list their fields, with the versions
    ``row_version`` gives and, for a template of a single unversioned row, its swapped partner b."""
    by_template: dict[tuple[str, str, str], list[Draft]] = defaultdict(list)
    for draft in drafts:
        t = draft.template
        by_template[(workbook_category(t.category, profile), t.category, t.q_id)].append(draft)

    def order(key: tuple[str, str, str]) -> tuple:
        category, bbq_category, q_id = key
        sources = profile.category(category).bbq_categories
        return (profile.category_names.index(category), sources.index(bbq_category),
                int(q_id) if q_id.isdigit() else 10**9, q_id)

    rows, next_id = [], defaultdict(int)
    for key in sorted(by_template, key=order):
        category, bbq_category, q_id = key
        next_id[category] += 1
        template_rows: list[ExportRow] = []
        kept = rows_to_translate(by_template[key], profile)
        for position, draft in enumerate(kept):
            version = row_version(draft, position, len(kept), profile)
            for field, english, text in draft_rows(draft, profile):
                template_rows.append(ExportRow(category, next_id[category], version, bbq_category, q_id,
                                               own_label(labels.get(draft.template.subject, ""), profile), field,
                                               english, text))
        if profile.templates.swapped_versions and len(kept) == 1 and not kept[0].template.version:
            template_rows += swapped_version(template_rows, "b")
        rows += with_follows(template_rows, profile)
    return rows


def with_follows(rows: list[ExportRow], profile: Profile) -> list[ExportRow]:
    """A template's rows with a ``Follows_version`` row after each version's, its English and draft the version's letter
    (explicit-versions formats only: the versions the translator may exchange)."""
    if profile.templates.workbook is not None or not profile.templates.counter_biased_versions:
        return rows
    with_rows: list[ExportRow] = []
    for version, version_rows in groupby(rows, key=lambda row: row.version):
        listed = list(version_rows)
        with_rows += [*listed, replace(listed[-1], field=FOLLOWS, english=version, draft=version)]
    return with_rows


def instruction_lines(profile: Profile) -> list[str]:
    """The Instructions sheet: the culture's postedit_instructions.txt, else neutral English text and cells' help."""
    if path := profile.existing_file("postedit_instructions"):
        return read_text(path, "post-edit instructions file").splitlines()
    cells = profile.translation.row_cells
    return neutral_instructions(profile) + version_lines(profile) + (
        ["", "Cells to fill for every template row (one row each, Field = the column name):"]
        + [f"- {c.name}: {c.help}" for c in cells] if cells else [])


def write_workbook(rows: list[ExportRow], path: Path, profile: Profile) -> Path:
    """Write one category's post-edit workbook atomically; the same rows give the same bytes."""
    from openpyxl.comments import Comment
    from openpyxl.styles import Alignment, Protection

    workbook = new_workbook(SHEET, HEADER)
    sheet = workbook.active
    unlocked = Protection(locked=False)
    helps = {c.name: c.help for c in profile.translation.row_cells}
    for number, row in enumerate(rows, start=2):
        for column, value in enumerate([*row.locked(), row.draft, ""], start=1):
            cell = sheet.cell(number, column)
            set_text(cell, value)
            cell.alignment = Alignment(wrap_text=True, vertical="top")
            if HEADER[column - 1] in EDITABLE:
                cell.protection = unlocked
        if row.field in helps:
            sheet.cell(number, HEADER.index("Field") + 1).comment = Comment(helps[row.field], "kobbq")
    for column, name in enumerate(HEADER, start=1):
        sheet.column_dimensions[sheet.cell(1, column).column_letter].width = WIDTHS.get(name, 12)
    sheet.freeze_panes = "A2"
    sheet.protection.sheet = True
    sheet.protection.formatRows = False  # the translator may resize rows to read long text
    sheet.protection.formatColumns = False

    manifest = workbook.create_sheet(MANIFEST)
    write_rows(manifest, [LOCKED, *(row.locked() for row in rows)])
    manifest.sheet_state = "hidden"
    manifest.protection.sheet = True

    export = workbook.create_sheet(EXPORT)
    export.append(["profile", profile.name])
    export.sheet_state = "hidden"
    export.protection.sheet = True

    instructions = workbook.create_sheet(INSTRUCTIONS, 0)
    for line in instruction_lines(profile):
        instructions.append([line])
    instructions.column_dimensions["A"].width = 120
    instructions.protection.sheet = True
    workbook.active = 1
    return save_workbook(workbook, path)


def export_postedit_workbooks(drafts: list[Draft], out_dir: Path, profile: Profile,
                              labels: Mapping[str, str]) -> list[Path]:
    """One ``postedit_<Category>.xlsx`` per adapted category; returns the paths, in profile order (``export_rows``')."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_workbook(list(rows), out_dir / f"postedit_{category}.xlsx", profile)
            for category, rows in groupby(export_rows(drafts, profile, labels), key=lambda row: row.category)]


@dataclass(frozen=True)
class EditedCell:
    """One returned row: the locked columns as exported, and what the translator wrote."""

    category: str
    row: ExportRow
    postedit: str
    notes: str
    where: Location  # the Post-edit cell


def clean_text(value: str, where: Location, findings: list[Finding], allowed: str = "") -> str:
    """A returned cell's text checked (``core.text``, at its cell) and normalised (NFC, whitespace)."""
    findings += check_text(value, where, allowed)
    return normalise_text(value, allowed)[0]


def read_workbook(path: Path, profile: Profile) -> list[EditedCell]:
    """Read a returned workbook; a .xlsm, a changed header or a changed locked cell is a UserError."""
    path = Path(path)
    if path.suffix.lower() != ".xlsx":
        raise UserError(f"expected an .xlsx workbook, got {path.suffix or 'no extension'} "
                        "(macro-enabled .xlsm workbooks are refused)", path)
    sheets = read_sheets(path)  # absent, a folder, a device, a named pipe or not a workbook: one line
    for name in (SHEET, MANIFEST):
        if name not in sheets:
            raise UserError(f"sheet {name!r} is missing; is this a workbook exported by 'kobbq postedit export'?", path)
    # The profile it was exported for (a workbook exported before workbooks recorded it has none).
    exported_for = {row[0]: row[1] for row in sheets.get(EXPORT, []) if len(row) > 1}.get("profile")
    if exported_for and exported_for != profile.name:
        raise UserError(f"this workbook was exported for profile {exported_for!r}, and is imported under profile "
                        f"{profile.name!r}; import it with --profile {exported_for} (or export the workbooks for "
                        f"{profile.name!r})", path)
    header, *rows = sheets[SHEET] or [[]]
    if header[:len(HEADER)] != HEADER or any(header[len(HEADER):]):
        raise UserError(f"the columns were changed: expected {', '.join(HEADER)}; found {', '.join(header)}",
                        Location(str(path), 1, sheet=SHEET))
    expected = sheets[MANIFEST][1:]
    while rows and not any(rows[-1]):
        rows.pop()
    if len(rows) != len(expected):
        raise UserError(f"the workbook has {len(rows)} rows where {len(expected)} were exported; rows must not be "
                        "added or removed", Location(str(path), sheet=SHEET))
    category = path.stem.removeprefix("postedit_")
    if profile.category(category) is None:
        raise UserError(f"the file name does not name a category of profile {profile.name!r}", path)
    cells = []
    for number, (values, original) in enumerate(zip(rows, expected), start=2):
        for column, (got, want) in enumerate(zip(values[:len(LOCKED)], original), start=1):
            if got != want:
                raise UserError(f"locked cell changed from {want!r} to {got!r}; IDs and source columns must stay as "
                                "exported", Location(str(path), number, HEADER[column - 1], SHEET))
        row = ExportRow(category, int(original[0]), *original[1:])
        postedit, notes = values[len(LOCKED)], values[len(LOCKED) + 1] if len(values) > len(LOCKED) + 1 else ""
        cells.append(EditedCell(category, row, postedit, notes, Location(str(path), number, "Post-edit", SHEET)))
    return cells
