"""Checks of workbook templates (the EsBBQ format), each at its file, row and column: what generation would
otherwise stop on, found before it runs and all at once.
"""

from __future__ import annotations

from dataclasses import replace

from core.errors import Location
from core.findings import Finding
from core.profile import Profile, WorkbookFormat
from tasks.templates.hooks import HOOKS
from tasks.templates.load import LoadedTemplates, TemplateRow
from tasks.templates.scripts import profile_script_findings, script_findings
from tasks.templates.slots import list_findings
from tasks.templates.validate_kobbq import profile_value_findings
from tasks.templates.workbook import PLACEHOLDER, forms_by_label, matching_rule

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
        findings.append(Finding("error", Location(template.source, template.row, column), code, message))

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
                findings.extend(list_findings(Location(template.source, template.row, column), label,
                                                   tuple(items), profile))
    for field in fmt.text_fields:
        if profile.writing is not None:  # a context or question is a sentence; an answer may be a bare name
            findings.extend(script_findings(Location(template.source, template.row, field),
                                            PLACEHOLDER.sub(" ", template.texts.get(field, "")), profile.writing,
                                            not field.startswith("answer"), profile.language))
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

