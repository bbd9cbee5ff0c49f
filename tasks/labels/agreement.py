"""Inter-annotator agreement: Fleiss' kappa and raw agreement, overall and per category. Both are reported because kappa
is undefined ("n/a") when every annotator gave every template the same label and can be low on a small, unbalanced
category even when raw agreement (what the consensus meeting works through) is high."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

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
        text = aligned(agreement_cells(self))
        text += ["", "Raw agreement: share of templates on which all annotators gave the same label. "
                     "Fleiss' kappa: n/a where one label was used throughout."]
        text += ["", f"{len(self.disagreements)} template(s) with disagreement (for the consensus meeting):"]
        for disagreement in self.disagreements:
            text.append(f"  {disagreement.subject}")
            for given in disagreement.annotations:
                text.append(f"    {given.annotator}: {given.label} - {given.rationale or '(no rationale)'}")
        return "\n".join(text)


def fleiss_kappa(counts: list[list[int]]) -> float | None:
    """Fleiss' kappa of per-subject category counts (each row: how many raters chose each category). Fleiss (1971): mean
    observed pairwise agreement P against chance agreement P_e from the category shares, kappa = (P - P_e) / (1 - P_e).
    Every row must have the same number of raters (at least two). Computed in exact fractions, so a kappa that is
    exactly 1/4 prints as 0.250 whatever the rounding. None where it is undefined: one category used throughout makes
    P_e = 1 (kappa 0/0), and no rows."""
    if not counts:
        return None
    raters = sum(counts[0])
    if raters < 2 or any(sum(row) != raters for row in counts):
        raise ValueError(f"Fleiss' kappa needs the same number (at least 2) of raters per subject: {counts}")
    observed = sum(Fraction(sum(c * (c - 1) for c in row), raters * (raters - 1)) for row in counts) / len(counts)
    totals = [sum(column) for column in zip(*counts)]
    chance = sum(Fraction(total, raters * len(counts)) ** 2 for total in totals)
    return None if chance == 1 else float((observed - chance) / (1 - chance))


def label_counts(matrix: list[list[str]]) -> list[list[int]]:
    """Per-subject counts of each annotator label, in ``ANNOTATOR_LABELS`` order, from a (subjects x raters) matrix."""
    return [[labels.count(label) for label in ANNOTATOR_LABELS] for labels in matrix]


def agreement(annotators: list[AnnotatorLabels], items: list[LabelItem]) -> AgreementReport:
    if len(annotators) < 2:
        raise UserError(f"agreement needs at least two annotators' files, got {len(annotators)}")

    def row_for(scope: str, scoped: list[LabelItem]) -> AgreementRow:
        matrix = [[a.labels[item.subject].label for a in annotators] for item in scoped]
        unanimous = sum(1 for labels in matrix if len(set(labels)) == 1)
        counts = Counter(label for labels in matrix for label in labels)
        return AgreementRow(scope, len(scoped), len(annotators), unanimous, fleiss_kappa(label_counts(matrix)),
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


def aligned(lines: list[list[str]]) -> list[str]:
    """A table as text: the first column left-aligned, the others right-aligned, a rule under the header."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
            for line in lines]
    return [text[0], "  ".join("-" * w for w in widths), *text[1:]]


def draft_consensus_rows(annotators: list[AnnotatorLabels], items: list[LabelItem]) -> list[dict[str, str]]:
    """A consensus file to complete: unanimous labels filled in, disagreements left blank with every vote. Why prefill:
    the meeting's time goes to the disagreements; an agreed label still gets its rationale (who agreed), and anyone may
    change it before the file is used."""
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
