"""Workbook templates (the EsBBQ/CaBBQ format): one xlsx sheet per category, ``{{NAME1}}`` placeholders, fillers
declared in cells. A column with a language suffix (``_es``, ``_ca``) belongs to that language, so one workbook
serves both cultures. Loading never raises on a bad row: it returns findings, like the TSV loader."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.findings import Finding
from core.profile import PoolRule, Profile, WorkbookFormat
from core.text import allowed_characters, check_text, plain_spaces
from core.workbooks import read_sheets
from tasks.templates.corrections import AppliedCorrection, Correction, apply_corrections
from tasks.templates.load import LoadedTemplates, TemplateRow, checked_row

Row = dict[str, object]
PLACEHOLDER = re.compile(r"\{\{([^}]*)\}\}")  # {{NAME1}}, {{NAME1-def}}, {{WORD2-indef}}
Forms = dict[str, dict[str, list[str]]]  # label -> spec ("" bare, "def", "indef") -> items


def _cell(value: object) -> object:
    """Empty -> "", whole floats -> int, text stripped (cells may start with a newline), booleans kept."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return value.strip()
    return value


def read_sheet(path: Path) -> tuple[list[str], list[tuple[int, Row]]]:
    """The first sheet as (header, [(row number, row)]), blank rows skipped. Cells keep the workbook's own types, not
    ``core.workbooks``' text: the generator needs them (a FALSE in ``include_name``, integer IDs, booleans)."""
    if not path.exists():
        raise UserError("file does not exist", path)
    lines = next(iter(read_sheets(path, _cell).values()))
    if not lines:
        raise UserError("empty sheet; expected a header row", path)
    header = [str(h) for h in lines[0]]
    rows = []
    for number, cells in enumerate(lines[1:], start=2):
        if all(c == "" for c in cells):
            continue
        rows.append((number, {name: cell for name, cell in zip(header, cells) if name}))
    return header, rows


def language_columns(header: list[str], language: str, suffixes: list[str]) -> dict[str, str]:
    """Selected name -> sheet column: shared columns as they are, ``X_<language>`` as ``X``; others dropped."""
    own = f"_{language}"
    selected: dict[str, str] = {}
    for name in header:
        suffix = next((s for s in suffixes if name.endswith(s)), None)
        if suffix is None:
            selected.setdefault(name, name)
        elif suffix == own:
            selected[name.removesuffix(own)] = name
    return selected


def select_language(row: Row, columns: dict[str, str]) -> Row:
    """The row under its language-selected column names (see ``language_columns``)."""
    return {name: row.get(column, "") for name, column in columns.items() if column}


def parse_list(text: str) -> list[str]:
    """``["a", "b"]`` or ``a, b`` -> items; quotes stripped from bracketed items."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("[") and text.endswith("]"):
        return [item.strip().strip('"') for item in text[1:-1].split(",")]
    return [item.strip() for item in text.split(",")]


def parse_mapping(text: str) -> dict[str, dict[str, list[str]]]:
    """``NAME1: [a]; NAME1-def: [el a]`` -> {label: {spec: items}} (bare: spec ``""``); a label with only def and indef
    lists gets a bare list from indef (``una maestra`` -> ``maestra``). ValueError for a part without ``:``."""
    mapping: dict[str, dict[str, list[str]]] = {}
    for part in (p.strip() for p in text.replace('"', "").split(";")):
        if not part:
            continue
        if ":" not in part:
            raise ValueError(f"cannot read {part[:40]!r}; expected 'KEY: [item, item]'")
        key, value = (p.strip() for p in part.split(":", 1))
        label, _, spec = key.replace("{", "").replace("}", "").partition("-")
        mapping.setdefault(label, {})[spec] = parse_list(value)
    for forms in mapping.values():
        if "" not in forms and set(forms) == {"def", "indef"}:
            forms[""] = [item.split(" ", 1)[1] if " " in item else "" for item in forms["indef"]]
    return mapping


@dataclass(frozen=True)
class Vocabulary:
    """The vocabulary and proper-name workbooks, language-selected and filtered."""

    words: list[Row]
    proper_names: list[Row]


def checked_cells(path: Path, rows: list[tuple[int, Row]], allowed: str, findings: list[Finding]) -> None:
    """The text check of every text cell (``core.text``), in place, its findings added to ``findings``."""
    for number, row in rows:
        for column, value in row.items():
            if isinstance(value, str):
                findings += check_text(value, Location(str(path), number, column), allowed)
                row[column] = plain_spaces(value, allowed)[1]


def load_vocabulary(folder: Path, fmt: WorkbookFormat, language: str, allowed: str = "",
                    findings: list[Finding] | None = None) -> Vocabulary:
    def table(name: str) -> list[Row]:
        header, rows = read_sheet(folder / name)
        checked_cells(folder / name, rows, allowed, [] if findings is None else findings)
        columns = language_columns(header, language, fmt.language_suffixes)
        return [select_language(row, columns) for _, row in rows]

    words = [row for row in table(fmt.vocabulary) if all(row.get(c, "") == "" for c in fmt.vocabulary_keep_when_empty)]
    return Vocabulary(words, table(fmt.proper_names))


def load_workbook_templates(folder: Path, profile: Profile, corrections: list[Correction] | None = None
                            ) -> LoadedTemplates:
    """Every category's sheet (``<Category>.xlsx`` in profile order), language-selected, as template rows, corrections
    applied (a row named ``Category|ID|version``); with the vocabulary, which generation needs, from the same folder."""
    fmt = profile.templates.workbook
    if fmt is None:
        raise UserError(f"profile {profile.name!r} has no [templates.workbook] section; it reads TSV templates")
    allowed = allowed_characters(profile)
    if not folder.is_dir():
        raise UserError("expected the folder of the workbook templates (one <Category>.xlsx each)", folder)
    templates: list[TemplateRow] = []
    findings: list[Finding] = []
    applied: list[AppliedCorrection] = []
    sheet_columns: dict[str, dict[str, str]] = {}
    paths = [folder / f"{category}.xlsx" for category in profile.category_names]
    if not any(path.exists() for path in paths):
        raise UserError(f"no template workbook here; expected some of {', '.join(p.name for p in paths)}", folder)
    for path in paths:
        if not path.exists():
            continue  # a build of some categories only; Table 1 shows the others as not in this build
        header, raw = read_sheet(path)
        columns = sheet_columns[str(path)] = language_columns(header, profile.language, fmt.language_suffixes)
        numbers = [number for number, _ in raw]
        rows = [{name: str(value) for name, value in select_language(row, columns).items()} for _, row in raw]
        keys = [f"{r.get(fmt.category_column, '')}|{r.get(fmt.id_column, '')}|{r.get('version', '')}" for r in rows]
        applied += apply_corrections(rows, numbers, keys, path, corrections or [])
        checked_cells(path, list(zip(numbers, rows)), allowed, findings)
        for number, row in zip(numbers, rows):
            template = _build_template(path, number, row, fmt, findings)
            if template is not None:
                templates.append(template)
    vocabulary = load_vocabulary(folder, fmt, profile.language, allowed, findings)
    return LoadedTemplates(folder, templates, findings, applied, [], [], vocabulary=vocabulary,
                           sheet_columns=sheet_columns)


def _build_template(path: Path, number: int, text: dict[str, str], fmt: WorkbookFormat, findings: list[Finding]
                    ) -> TemplateRow | None:
    template_id, declared = checked_row(Location(str(path), number), text, fmt.required_cells, fmt.id_column,
                                        {fmt.names_column: parse_mapping, fmt.words_column: parse_mapping}, findings)
    if template_id is None:
        return None
    return TemplateRow(
        source=str(path), row=number, category=text[fmt.category_column], template_id=template_id,
        version=text.get("version", ""), label=text.get(fmt.label_column, ""),
        stereotype=text.get(fmt.targets_column, ""),
        texts={field: text.get(field, "") for field in fmt.text_fields},
        names=_flatten(declared[fmt.names_column]), lexical=_flatten(declared[fmt.words_column]),
        bbq_id=text.get(fmt.bbq_id_column, ""),
        bbq_category=fmt.bbq_category_names.get(text.get(fmt.bbq_category_column, ""),
                                                text.get(fmt.bbq_category_column, "")),
        columns=text,
    )


def _flatten(mapping: dict[str, dict[str, list[str]]]) -> dict[str, tuple[str, ...]]:
    """{label: {spec: items}} -> {"NAME1": (...), "NAME1-def": (...)}, order kept."""
    return {f"{label}-{spec}" if spec else label: tuple(items)
            for label, forms in mapping.items() for spec, items in forms.items()}


def forms_by_label(flat: dict[str, tuple[str, ...]]) -> Forms:
    """A template row's flattened lists ({"NAME1-def": ...}) grouped by label again (the inverse of _flatten)."""
    forms: Forms = {}
    for key, items in flat.items():
        label, _, spec = key.partition("-")
        forms.setdefault(label, {})[spec] = list(items)
    return forms


def matching_rule(template: TemplateRow, fmt: WorkbookFormat) -> PoolRule | None:
    """The first pool rule whose category, subcategory and proper-names flag fit the row."""
    subcategory = template.columns.get(fmt.subcategory_column, "")
    proper = template.columns.get(fmt.proper_column, "") != ""
    return next((rule for rule in fmt.pools
                 if (not rule.category or rule.category == template.category)
                 and (not rule.subcategory or rule.subcategory == subcategory)
                 and (rule.proper is None or rule.proper == proper)), None)
