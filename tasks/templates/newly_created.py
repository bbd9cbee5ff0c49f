"""Newly-created (NC) templates: written directly in the target language, in the KoBBQ format.

They enter the pipeline here with label NC and face exactly the checks of any template
(``tasks.templates.validate_kobbq.validate_loaded``), plus two of their own: the label must be NC and there
must be no BBQ link (an NC template has no English source; a linked one is an adapted
template in the wrong file). IDs must not clash with the adapted templates they join.

Entry point: ``import_newly_created(path, profile, corrections=None, others=None) -> NewlyCreated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.decisions import Decision, template_subject
from core.findings import Finding, raise_if_errors
from core.profile import Profile
from core.text import allowed_characters
from tasks.templates.corrections import Correction
from tasks.templates.load import NC, LoadedTemplates, TemplateRow, load_kobbq_templates
from tasks.templates.validate_kobbq import validate_loaded

STAGE = "labels"  # the stage its decisions carry: NC is a label, decided beside the labelling's ST/TM/SR


@dataclass(frozen=True)
class NewlyCreated:
    loaded: LoadedTemplates
    findings: list[Finding]  # warnings only: any error stops the import
    decisions: list[Decision]

    @property
    def templates(self) -> list[TemplateRow]:
        return self.loaded.templates


def nc_findings(templates: list[TemplateRow]) -> list[Finding]:
    """Rows of an NC file that are not NC templates: another label, or a link to a BBQ source."""
    findings = []
    for row in templates:
        if row.label != NC:
            findings.append(Finding("error", row.where("Label_annotation"), "not-nc",
                                    f"label {row.label!r}: a newly-created template is labelled {NC}; adapted "
                                    "(ST/TM) templates come from the post-edited translation, not from this file"))
        if row.bbq_id or row.bbq_category:
            findings.append(Finding("error", row.where("BBQ_id"), "nc-with-link",
                                    f"links to BBQ {row.bbq_category} {row.bbq_id}; a newly-created template has "
                                    "no BBQ source (leave BBQ_id and BBQ_category empty or N/A)"))
    return findings


def clash_findings(templates: list[TemplateRow], others: list[TemplateRow]) -> list[Finding]:
    """NC template IDs already used by the adapted templates they will be merged with."""
    taken = {row.template_key: row for row in others}
    first = {}
    for row in templates:
        first.setdefault(row.template_key, row)
    return [Finding("error", row.where("ID"), "id-clash",
                    f"{row.category} template {row.template_id} already exists in "
                    f"{Path(taken[key].source).name} (row {taken[key].row}); give the new template an unused ID")
            for key, row in first.items() if key in taken]


def nc_decisions(templates: list[TemplateRow], profile: Profile) -> list[Decision]:
    rows_by_template: dict[tuple[str, int], list[TemplateRow]] = {}
    for row in templates:
        rows_by_template.setdefault(row.template_key, []).append(row)
    return [Decision(
        stage=STAGE, subject_type="template", subject=template_subject(category, template_id), rule="newly-created",
        outcome=NC,
        reason=f"Written directly in {profile.language} ({len(rows)} row(s), versions "
               f"{', '.join(r.version for r in rows)}); no BBQ source, so labelled {NC} and validated like every template.",
        numbers={"rows": len(rows)}, source=f"{Path(rows[0].source).name} row {rows[0].row}")
        for (category, template_id), rows in rows_by_template.items()]


def import_newly_created(path: Path, profile: Profile, corrections: list[Correction] | None = None,
                         others: list[TemplateRow] | None = None) -> NewlyCreated:
    """Load, validate and label an NC template file; any error stops the import with every error listed."""
    loaded = load_kobbq_templates(Path(path), corrections, profile.templates.separators, allowed_characters(profile))
    findings = validate_loaded(loaded, profile) + nc_findings(loaded.templates)
    findings += clash_findings(loaded.templates, others or [])
    raise_if_errors(f"newly-created template file {Path(path).name}", findings, "nothing was imported")
    return NewlyCreated(loaded, findings, nc_decisions(loaded.templates, profile))
