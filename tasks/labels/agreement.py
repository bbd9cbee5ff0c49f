"""Inter-annotator agreement: Fleiss' kappa (statsmodels) and raw agreement, overall and per category.

Fleiss' kappa corrects the observed agreement for the agreement expected by chance from
the label shares; raw agreement (the share of templates on which every annotator gave the
same label) is what the consensus meeting has to work through. Both are reported because
kappa is undefined (and printed as "n/a") when every annotator gave every template the
same label, and can be low on a small, unbalanced category even when raw agreement is high.

Entry points: ``agreement(annotators, items) -> AgreementReport``, ``draft_consensus_rows(...)``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from core.errors import UserError
from tasks.labels.annotations import Annotation, AnnotatorLabels
from tasks.labels.template_set import ANNOTATOR_LABELS, LabelItem, categories_of

OVERALL = "all"


@dataclass(frozen=True)
class AgreementRow:
    scope: str  # "all" or a BBQ category
    templates: int
    annotators: int
    unanimous: int  # templates on which every annotator gave the same label
    kappa: float | None  # Fleiss' kappa; None where it is undefined (a single label used throughout)
    label_counts: dict[str, int]  # labels given, over all annotators

    @property
    def raw_agreement(self) -> float:
        return self.unanimous / self.templates if self.templates else math.nan


@dataclass(frozen=True)
class Disagreement:
    subject: str
    category: str
    annotations: tuple[Annotation, ...]  # one per annotator, in the annotators' order


@dataclass(frozen=True)
class AgreementReport:
    annotators: tuple[str, ...]
    rows: list[AgreementRow]  # "all" first, then the categories in template order
    disagreements: list[Disagreement]

    @property
    def text(self) -> str:
        return format_agreement(self)


def kappa_of(matrix: list[list[int]]) -> float | None:
    """Fleiss' kappa of a (templates x annotators) matrix of label codes, None when undefined."""
    # statsmodels (and scipy under it) take seconds to import: only when a kappa is computed, not for every
    # command that loads the stages (kobbq status).
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table, _ = aggregate_raters(np.asarray(matrix), n_cat=len(ANNOTATOR_LABELS))
    shares = table.sum(axis=0) / table.sum()
    if np.isclose((shares ** 2).sum(), 1.0):  # one label throughout: chance agreement is 1, kappa is 0/0
        return None
    return float(fleiss_kappa(table, method="fleiss"))


def agreement(annotators: list[AnnotatorLabels], items: list[LabelItem]) -> AgreementReport:
    if len(annotators) < 2:
        raise UserError(f"agreement needs at least two annotators' files, got {len(annotators)}")
    codes = {label: i for i, label in enumerate(ANNOTATOR_LABELS)}

    def row_for(scope: str, scoped: list[LabelItem]) -> AgreementRow:
        matrix = [[codes[a.labels[item.subject].label] for a in annotators] for item in scoped]
        unanimous = sum(1 for labels in matrix if len(set(labels)) == 1)
        counts = Counter(ANNOTATOR_LABELS[code] for labels in matrix for code in labels)
        return AgreementRow(scope, len(scoped), len(annotators), unanimous, kappa_of(matrix) if matrix else None,
                            {label: counts[label] for label in ANNOTATOR_LABELS})

    rows = [row_for(OVERALL, items)]
    rows += [row_for(category, [i for i in items if i.category == category]) for category in categories_of(items)]
    disagreements = []
    for item in items:
        given = tuple(a.labels[item.subject] for a in annotators)
        if len({g.label for g in given}) > 1:
            disagreements.append(Disagreement(item.subject, item.category, given))
    return AgreementReport(tuple(a.annotator for a in annotators), rows, disagreements)


def agreement_cells(report: AgreementReport) -> list[list[str]]:
    """The agreement table, header first: one row per scope ("all", then each category)."""
    header = ["scope", "templates", "annotators", "unanimous", "raw agreement", "Fleiss kappa",
              *(f"{label} given" for label in ANNOTATOR_LABELS)]
    lines = [header]
    for row in report.rows:
        kappa = "n/a" if row.kappa is None else f"{row.kappa:.3f}"
        lines.append([row.scope, str(row.templates), str(row.annotators), str(row.unanimous),
                      f"{row.raw_agreement:.1%}", kappa, *(str(row.label_counts[label]) for label in ANNOTATOR_LABELS)])
    return lines


def agreement_table(report: AgreementReport) -> list[dict[str, object]]:
    """The agreement table as rows by column (what the labels stage shows with its run)."""
    header, *rows = agreement_cells(report)
    return [dict(zip(header, row)) for row in rows]


def format_agreement(report: AgreementReport) -> str:
    lines = agreement_cells(report)
    header = lines[0]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
            for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    text += ["", "Raw agreement: share of templates on which all annotators gave the same label. "
                 "Fleiss' kappa: n/a where one label was used throughout."]
    text += ["", f"{len(report.disagreements)} template(s) with disagreement (for the consensus meeting):"]
    for disagreement in report.disagreements:
        text.append(f"  {disagreement.subject}")
        for given in disagreement.annotations:
            text.append(f"    {given.annotator}: {given.label} - {given.rationale or '(no rationale)'}")
    return "\n".join(text)


def draft_consensus_rows(annotators: list[AnnotatorLabels], items: list[LabelItem]) -> list[dict[str, str]]:
    """A consensus file to complete: unanimous labels filled in, disagreements left blank with every vote.

    Why prefill: the meeting's time goes to the disagreements; an agreed label still gets its
    rationale (who agreed), and anyone may change it before the file is used.
    """
    rows = []
    for item in items:
        given = [a.labels[item.subject] for a in annotators]
        labels = {g.label for g in given}
        agreed = labels.pop() if len(labels) == 1 else ""
        rows.append({
            "template": item.subject,
            "label": agreed,
            "rationale": f"unanimous {agreed} ({len(given)} of {len(given)} annotators)" if agreed else "",
            "votes": "; ".join(f"{g.annotator}: {g.label}" for g in given),
            "annotator_rationales": " | ".join(f"{g.annotator}: {g.rationale}" for g in given if g.rationale),
        })
    return rows


DRAFT_COLUMNS = ["template", "label", "rationale", "votes", "annotator_rationales"]
