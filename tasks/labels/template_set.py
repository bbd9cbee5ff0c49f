"""The unit of labelling: one BBQ template (``bbq:<category>:<Q_id>``, all its versions, which share one stereotype and
so one label), and a template set's fingerprint, which travels inside every workbook so that labels given for one set
of templates (or a since-edited text) are never imported against another."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.findings import Finding, raise_if_errors as raise_findings
from core.profile import Profile
from tasks.templates.bbq import BBQTemplate, load_bbq_templates
from tasks.templates.load import NC, SR, ST, TM

ANNOTATOR_LABELS = (ST, TM, SR)  # what an annotator may choose for a BBQ template
KEPT_LABELS = (ST, TM)  # labels whose templates go on to translation and the survey
LABEL_MEANINGS = {
    ST: "simply-transferred: the stereotype holds in the target culture; translate only",
    TM: "target-modified: the stereotype exists but targets other groups; adapt the groups",
    SR: "sample-removed: does not fit the target culture; excluded",
    NC: "newly-created: written directly in the target language",
}


@dataclass(frozen=True)
class LabelItem:
    """One BBQ template to label, with the rows (versions) an annotator reads to decide."""

    subject: str  # bbq:<category>:<Q_id>
    category: str
    q_id: str
    rows: tuple[BBQTemplate, ...]

    @property
    def versions(self) -> str:
        return ", ".join(r.version for r in self.rows if r.version) or "(one row)"


def group_templates(templates: list[BBQTemplate]) -> list[LabelItem]:
    """BBQ rows grouped by template, in file order (the order annotators see)."""
    grouped: dict[str, list[BBQTemplate]] = {}
    for row in templates:
        grouped.setdefault(row.subject, []).append(row)
    return [LabelItem(subject, rows[0].category, rows[0].q_id, tuple(rows)) for subject, rows in grouped.items()]


def fingerprint(items: list[LabelItem]) -> str:
    """A short hash of the template IDs and the text the annotators read. Why the text too: a label is a judgement about
    that text; if a context is later corrected, labels given to the old text should be reviewed, not silently carried
    over."""
    payload = [[item.subject, [[row.version, *row.texts.values()] for row in item.rows]] for item in items]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def categories_of(items: list[LabelItem]) -> list[str]:
    return list(dict.fromkeys(item.category for item in items))


def load_label_items(bbq_path: Path, profile: Profile, categories: list[str] | None = None,
                     not_taken: list[str] | None = None) -> tuple[list[BBQTemplate], list[LabelItem]]:
    """The BBQ rows and templates to label, of the categories the profile uses (``categories`` narrows them; another is
    an error, not an empty workbook), without ``not_taken`` (an ID the files do not hold is an error: a mistyped one
    would leave a template in)."""
    usable = list(dict.fromkeys(name for category in profile.categories for name in category.bbq_categories))
    if categories:
        unknown = [c for c in categories if c not in usable]
        if unknown:
            raise UserError(f"BBQ categor(ies) {', '.join(unknown)} feed no category of profile {profile.name!r}; "
                            f"usable: {', '.join(usable)}")
    templates, _ = load_bbq_templates(Path(bbq_path), categories or usable)
    left_out = set(not_taken or ())
    if unknown := sorted(left_out - {t.subject for t in templates}):
        raise UserError(f"not taken: {', '.join(unknown)} is not among the BBQ templates read (IDs such as "
                        f"{templates[0].subject if templates else 'bbq:Age:1'})", bbq_path)
    templates = [t for t in templates if t.subject not in left_out]
    return templates, group_templates(templates)


def raise_if_errors(what: str, findings: list[Finding]) -> None:
    """All-or-nothing labelling input: nothing of any labelling file is imported when one of them has an error. A
    never-filled workbook has one problem per template: the first 100 are listed, the rest add nothing."""
    raise_findings(what, findings, "nothing was imported", 100, " of the same kinds (fix these and import again)")
