"""Checks of a KoBBQ-format template file, each at its file, row and column: errors stop a build, warnings are
legal but suspicious (an inline item that does not start with its filler names the person differently).
"""

from __future__ import annotations

from collections import defaultdict

from core.errors import Location
from core.findings import Finding
from core.profile import Profile
from tasks.templates.kobbq_format import fill_count
from tasks.templates.load import TEXT_COLUMNS, LoadedTemplates, TemplateRow
from tasks.templates.scripts import profile_script_findings, script_findings, slot_text
from tasks.templates.slots import PERSON_SLOTS, bracket_problems, list_findings
from tasks.templates.versions import version_findings

SENTENCE_FIELDS = ("ambiguous_context", "disambiguating_context", "biased_question", "counter_biased_question")


def validate_loaded(loaded: LoadedTemplates, profile: Profile) -> list[Finding]:
    """All findings for a loaded file: those of loading (the text check among them), normalisation and every rule
    below."""
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
        text = template.texts[field]
        for problem in bracket_problems(text):
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
    partners = dict(zip(profile.templates.counter_biased_versions, profile.templates.swapped_versions))
    partners.update({b: a for a, b in partners.items()})
    for versions in by_template.values():
        for version, template in versions.items():
            partner = partners.get(version)
            if partner is not None and partner not in versions:
                findings.append(Finding("error", template.where("version"), "unpaired",
                                        f"version {version} of {template.category} template "
                                        f"{template.template_id} has no version {partner}"))
            if template.label != next(iter(versions.values())).label:
                findings.append(Finding("error", template.where("Label_annotation"), "label-mismatch",
                                        "versions of one template carry different labels"))
    return findings
