"""Template files loaded and checked in their profile's format, every error at its file, row and column.

A format (``TEMPLATE_FORMATS``; what a new one needs: ``docs/extending.md``) is its reader, its checks, its adapter
to the expansion engine, and whether a release of it is ``generated`` (expanded whole, without a test split)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from core.errors import Location, UserError
from core.findings import Finding, raise_if_errors
from core.profile import Profile, WorkbookFormat
from core.text import allowed_characters
from tasks.templates.corrections import Correction, load_corrections
from tasks.templates.engine import Expansion
from tasks.templates.hooks import HOOKS
from tasks.templates.kobbq_format import expand_templates, fill_count
from tasks.templates.load import TEXT_COLUMNS, LoadedTemplates, TemplateRow, load_kobbq_templates
from tasks.templates.scripts import profile_script_findings, script_findings, slot_text
from tasks.templates.slots import PERSON_SLOTS, bracket_problems, list_findings
from tasks.templates.versions import partner_version, version_findings
from tasks.templates.workbook import PLACEHOLDER, Vocabulary, forms_by_label, load_workbook_templates, matching_rule
from tasks.templates.workbook_format import expand_workbook

# --- the KoBBQ format's checks ------------------------------------------------------------------------------------

SENTENCE_FIELDS = ("ambiguous_context", "disambiguating_context", "biased_question", "counter_biased_question")


def validate_loaded(loaded: LoadedTemplates, profile: Profile) -> list[Finding]:
    """All findings for a loaded file: loading's (the text check among them), normalisation's and every rule below."""
    findings = list(loaded.findings) + profile_script_findings(profile)
    findings += [Finding("error", Location(str(loaded.path), record.row, record.column), "not-nfc",
                         "text is not in Unicode NFC form; identical-looking words would not match")
                 for record in loaded.normalisations if record.what == "NFC"]
    for template in loaded.templates:
        findings.extend(check_row(template, profile))
    findings.extend(check_keys_and_pairs(loaded.templates, profile))
    findings.extend(version_findings(loaded.templates, profile))
    findings.extend(size_findings(loaded.templates))
    return sorted(findings, key=lambda f: (f.where.row or 0, f.where.column or "", f.code))


# KoBBQ's largest row expands to 3,344 samples (its 570 rows to 76,568): a row thirty times that is most likely a
# slot list pasted wrong, and its release takes minutes and gigabytes (a row of 1.6 million samples: 1.3 GB).
LARGE_ROW_SAMPLES = 100_000


def size_findings(templates: list[TemplateRow], limit: int = LARGE_ROW_SAMPLES) -> list[Finding]:
    """A warning for each row that expands to more than ``limit`` samples (every combination of its slots' items,
    four samples each), with the product that makes it."""
    findings = []
    for template in templates:
        samples = 4 * fill_count(template)
        if samples > limit:
            sizes = " x ".join(f"{len(items):,} {name}" for name, items in template.slots.items())
            findings.append(Finding("warning", template.where("Lexical_diversity"), "row-size",
                                    f"this row expands to {samples:,} samples ({sizes}, x 4), more than "
                                    f"{limit:,}: check its slot lists"))
    return findings


def profile_value_findings(template: TemplateRow, profile: Profile, category_column: str, label_column: str
                           ) -> list[Finding]:
    """The row's category, version and label are among the profile's."""
    checks = (
        (category_column, "unknown-category", profile.category(template.category) is not None,
         f"category {template.category!r} is not in profile {profile.name!r} ({', '.join(profile.category_names)})"),
        ("version", "bad-version", template.version in profile.templates.versions,
         f"version {template.version!r} is not one of {', '.join(profile.templates.versions)}"),
        (label_column, "bad-label", template.label in profile.templates.labels,
         f"label {template.label!r} is not one of {', '.join(profile.templates.labels)}"))
    return [Finding("error", template.where(column), code, message) for column, code, ok, message in checks if not ok]


def check_row(template: TemplateRow, profile: Profile) -> list[Finding]:
    findings: list[Finding] = []

    def add(severity: str, column: str | None, code: str, message: str) -> None:
        findings.append(Finding(severity, template.where(column), code, message))  # type: ignore[arg-type]

    findings += profile_value_findings(template, profile, "Category", "Label_annotation")
    for person in PERSON_SLOTS:
        if person not in template.names:
            add("error", "Names", "missing-person", f"Names does not declare {person}")
    for name in template.names:
        if name not in PERSON_SLOTS:
            add("error", "Names", "bad-person", f"Names declares {name}; only N1 and N2 are people")
    for name, items in template.slots.items():
        column = "Names" if name in template.names else "Lexical_diversity"
        if any(not item for item in items):
            add("error", column, "empty-item", f"slot {name} has an empty item")
        findings.extend(list_findings(template.where(column), name, items, profile))
    used: set[str] = set()
    parsed = template.parsed
    for field, column in TEXT_COLUMNS.items():
        for problem in bracket_problems(template.texts[field]):
            add("error", column, "brackets", problem)
        if profile.writing is not None:
            findings.extend(script_findings(template.where(column), slot_text(parsed[field]), profile.writing,
                                            field in SENTENCE_FIELDS, profile.language))
        for inline in parsed[field].slots:
            used.add(inline.name)
            findings.extend(_check_inline(template, column, inline.name, inline.items))
            findings.extend(list_findings(template.where(column), inline.name, inline.items or (), profile))
    for name in template.slots:
        if name not in used:
            column = "Names" if name in template.names else "Lexical_diversity"
            add("warning", column, "slot-unused", f"slot {name} is declared but never used in the text")
    for field, column in (("biased_answer", "Biased_question_answer"),
                          ("counter_biased_answer", "Counter-biased_question_answer")):
        people = {s.name for s in parsed[field].slots if s.name in PERSON_SLOTS}
        if len(people) != 1:
            add("error", column, "answer-person",
                f"an answer must name exactly one person slot (N1 or N2); found {sorted(people) or 'none'}")
    return findings


def _check_inline(template: TemplateRow, column: str, name: str, items: tuple[str, ...] | None) -> list[Finding]:
    where = template.where(column)
    declared = template.slots.get(name)
    if declared is None:
        return [Finding("error", where, "slot-undeclared",
                        f"slot {name} is used but declared in neither Names nor Lexical_diversity")]
    if items is None:
        return [Finding("error", where, "slot-bare",
                        f"slot {name} is written bare ('[{name}]'); a template text must list its items")]
    if len(items) != len(declared):
        return [Finding("error", where, "slot-length",
                        f"inline list of {name} has {len(items)} items but its declaration has {len(declared)}")]
    findings = []
    for position, (item, filler) in enumerate(zip(items, declared), start=1):
        if not item:
            findings.append(Finding("error", where, "empty-item", f"item {position} of {name} is empty"))
        elif not item.startswith(filler):
            findings.append(Finding("warning", where, "item-not-filler",
                                    f"item {position} of {name} is {item!r}, which does not start with its "
                                    f"declared filler {filler!r}"))
    return findings


def check_keys_and_pairs(templates: list[TemplateRow], profile: Profile) -> list[Finding]:
    """Duplicate keys, and versions that lack their swapped partner (a without b, c without d)."""
    findings = []
    seen: dict[str, TemplateRow] = {}
    by_template: dict[tuple[str, int], dict[str, TemplateRow]] = defaultdict(dict)
    for template in templates:
        if template.key in seen:
            first = seen[template.key]
            findings.append(Finding("error", template.where("ID"), "duplicate",
                                    f"template {template.key} already appears at row {first.row}"))
            continue
        seen[template.key] = template
        by_template[template.template_key][template.version] = template
    for versions in by_template.values():
        for version, template in versions.items():
            partner = partner_version(version, profile)
            if partner != "?" and partner not in versions:
                findings.append(Finding("error", template.where("version"), "unpaired",
                                        f"version {version} of {template.category} template "
                                        f"{template.template_id} has no version {partner}"))
            if template.label != next(iter(versions.values())).label:
                findings.append(Finding("error", template.where("Label_annotation"), "label-mismatch",
                                        "versions of one template carry different labels"))
    return findings


# --- the workbook format's checks ---------------------------------------------------------------------------------

SPECS = ("", "def", "indef")


def validate_workbook(loaded: LoadedTemplates, profile: Profile) -> list[Finding]:
    fmt = profile.templates.workbook
    assert fmt is not None
    findings = list(loaded.findings) + hook_findings(profile, fmt) + profile_script_findings(profile)
    for template in loaded.templates:
        findings.extend(check_workbook_row(template, profile, fmt))
    first: dict[tuple[str, str], TemplateRow] = {}
    for template in loaded.templates:
        key = (template.source, template.key)
        if key in first:
            # A warning: upstream EsBBQ has such rows (DisabilityStatus 17 v-a, v-b); both generate.
            findings.append(Finding("warning", template.where(fmt.id_column), "duplicate",
                                    f"template {template.key} already appears at row {first[key].row}; "
                                    "both rows generate"))
        first.setdefault(key, template)
    return sorted((_in_sheet_terms(f, loaded) for f in findings),
                  key=lambda f: (f.where.file, f.where.row or 0, f.where.column or "", f.code))


def _in_sheet_terms(finding: Finding, loaded: LoadedTemplates) -> Finding:
    """Name the column as the sheet does (``names_es``), so a person can find the cell."""
    columns = loaded.sheet_columns.get(finding.where.file, {})
    column = columns.get(finding.where.column or "", finding.where.column)
    return replace(finding, where=replace(finding.where, column=column))


def hook_findings(profile: Profile, fmt: WorkbookFormat) -> list[Finding]:
    """Hooks the profile names but nobody registered (tasks/templates/hooks.py)."""
    where = Location(str(profile.path or profile.name), column="templates.workbook.hooks")
    return [Finding("error", where, "unknown-hook", f"{kind} = {name!r} is not a registered {kind} hook "
                    f"({', '.join(HOOKS[kind])})")
            for kind, name in fmt.hooks.items() if name not in HOOKS[kind]]


def check_workbook_row(template: TemplateRow, profile: Profile, fmt: WorkbookFormat) -> list[Finding]:
    findings: list[Finding] = []

    def add(column: str, code: str, message: str) -> None:
        findings.append(Finding("error", template.where(column), code, message))

    findings += profile_value_findings(template, profile, fmt.category_column, fmt.label_column)
    names, lexical = forms_by_label(template.names), forms_by_label(template.lexical)
    for column, forms in ((fmt.names_column, names), (fmt.words_column, lexical)):
        for label, lists in forms.items():
            lengths = {spec or "bare": len(items) for spec, items in lists.items()}
            if len(set(lengths.values())) > 1:
                add(column, "list-lengths", f"the lists of {label} differ in length: "
                    + ", ".join(f"{spec} {n}" for spec, n in lengths.items()))
            if column == fmt.names_column and label not in fmt.people:
                add(column, "bad-person", f"{label} is not a person ({', '.join(fmt.people)})")
            for items in lists.values():  # list punctuation the profile does not accept: never one silent item
                findings.extend(list_findings(template.where(column), label, tuple(items), profile))
    for field in fmt.text_fields:
        if profile.writing is not None:  # a context or question is a sentence; an answer may be a bare name
            findings.extend(script_findings(template.where(field), PLACEHOLDER.sub(" ", template.texts.get(field, "")),
                                            profile.writing, not field.startswith("answer"), profile.language))
        for match in PLACEHOLDER.finditer(template.texts.get(field, "")):
            label, _, spec = match.group(1).partition("-")
            if spec not in SPECS:
                add(field, "bad-form", f"{match.group(0)}: form {spec!r} is not def or indef")
            elif label in fmt.people:
                if spec and names and spec not in names.get(label, {}):
                    add(field, "form-undeclared", f"{match.group(0)} is used but {fmt.names_column} has no "
                        f"{label}-{spec} list")
            elif label not in lexical or spec not in lexical[label]:
                add(field, "slot-undeclared", f"{match.group(0)} is neither a person nor declared in "
                    f"{fmt.words_column}")
    if matching_rule(template, fmt) is None:
        add(fmt.category_column, "no-pool", "no candidate pool rule of the profile covers this row")
    return findings


# --- the registry and the one way in ----------------------------------------------------------------------------------

MAX_LISTED_ERRORS = 30
Load = Callable[[Path, Profile, list[Correction]], LoadedTemplates]
Check = Callable[[LoadedTemplates, Profile], list[Finding]]
Expand = Callable[[list[TemplateRow], Profile, Vocabulary | None], Expansion]


@dataclass(frozen=True)
class TemplateFormat:
    load: Load
    check: Check
    expand: Expand
    generated: bool


TEMPLATE_FORMATS = {
    # KoBBQ's template file: one TSV, a row per version, inline slot lists.
    "kobbq": TemplateFormat(lambda path, profile, corrections: load_kobbq_templates(
        path, corrections, profile.templates.separators, allowed_characters(profile)), validate_loaded,
        lambda templates, profile, _: expand_templates(templates, profile), generated=False),
    # EsBBQ's workbooks: a sheet per category with placeholders, and a vocabulary.
    "workbook": TemplateFormat(load_workbook_templates, validate_workbook, expand_workbook, generated=True),
}


def template_format(profile: Profile) -> TemplateFormat:
    """The profile's template format: ``workbook`` when it describes its workbooks, else ``kobbq``."""
    return TEMPLATE_FORMATS["workbook" if profile.templates.workbook is not None else "kobbq"]


def load_templates(path: Path, profile: Profile, corrections: list[Correction] | None = None) -> LoadedTemplates:
    """The one template loader: the profile's format (a KoBBQ TSV, or a folder of workbooks), corrections applied."""
    return template_format(profile).load(path, profile, corrections or [])


def load_checked(path: Path, corrections_path: Path | None, profile: Profile) -> tuple[LoadedTemplates, list[Finding]]:
    """Load and validate a template file; any error stops the build with every error listed."""
    corrections = load_corrections(corrections_path) if corrections_path else []
    loaded = load_templates(path, profile, corrections)
    return loaded, check_loaded(loaded, path, profile)


def check_loaded(loaded: LoadedTemplates, path: Path, profile: Profile) -> list[Finding]:
    """The checks of ``load_checked`` on a file already loaded; its findings (warnings) when none is an error."""
    findings = template_format(profile).check(loaded, profile)
    if not loaded.templates and not loaded.findings:
        raise UserError("has a header but no template rows; nothing to build", path)
    raise_if_errors("the template file", findings, "nothing was built", MAX_LISTED_ERRORS,
                    f" (run `kobbq validate --profile {profile.argument} {path}` for all)")
    return findings
