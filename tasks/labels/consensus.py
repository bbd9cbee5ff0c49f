"""The consensus file: the final label and rationale of every BBQ template (``template,label,rationale``; other columns,
such as the votes of a ``--draft``, are ignored). Every final label becomes a decision, and an SR template also an
exclusion decision, since it leaves the pipeline here. A template without a final label stops the build
(``require_final_labels``): nothing is translated on a guess."""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_records
from tasks.templates.bbq import BBQTemplate
from core.decisions import Decision
from core.text import check_text, plain_spaces
from core.findings import Finding
from tasks.labels.template_set import ANNOTATOR_LABELS, LABEL_MEANINGS, SR, group_templates, raise_if_errors

STAGE = "labels"
CONSENSUS_COLUMNS = ["template", "label", "rationale"]
ALIASES = {"subject": "template"}  # the translation stage's labels file says "subject"


@dataclass(frozen=True)
class FinalLabel:
    subject: str
    label: str
    rationale: str
    where: Location


@dataclass(frozen=True)
class Consensus:
    path: Path
    labels: dict[str, FinalLabel]  # bbq:<category>:<Q_id> -> final label
    decisions: list[Decision]


def read_consensus_rows(path: Path, require_rationale: bool) -> list[tuple[int, dict[str, str]]]:
    if not path.exists():
        raise UserError("consensus file does not exist", path)
    names, records = read_records(path)
    header = [ALIASES.get(h, h) for h in names]
    rows = [(number, {ALIASES.get(k, k): v.strip() for k, v in row.items()}) for number, row in records]
    required = CONSENSUS_COLUMNS if require_rationale else CONSENSUS_COLUMNS[:2]
    if missing := [c for c in required if c not in header]:
        raise UserError(f"missing column(s) {', '.join(missing)}; a consensus file has columns "
                        f"{', '.join(CONSENSUS_COLUMNS)}", path)
    return rows


def load_consensus(path: Path, bbq_templates: list[BBQTemplate], require_rationale: bool = True,
                   annotations: dict[str, dict[str, str]] | None = None, allowed: str = "") -> Consensus:
    """A consensus file checked against its BBQ templates, its texts by ``core.text``. With ``annotations`` (subject ->
    annotator -> label) each decision records the votes, and a final label not among the most-voted is an override, so
    a reviewer sees where the discussion changed the majority's answer. An empty label (not decided yet) is allowed."""
    path = Path(path)
    known = {item.subject for item in group_templates(bbq_templates)}
    findings: list[Finding] = []
    labels: dict[str, FinalLabel] = {}
    for number, row in read_consensus_rows(path, require_rationale):
        def problem(column: str, message: str) -> None:
            findings.append(Finding("error", Location(str(path), number, column), "consensus", message))

        for column in ("label", "rationale"):  # in NFC, a control character or another space a plain one
            findings += check_text(row.get(column, ""), Location(str(path), number, column), allowed)
            row[column] = plain_spaces(unicodedata.normalize("NFC", row.get(column, "")), allowed)[1]
        subject, label, rationale = row.get("template", ""), row["label"].upper(), row["rationale"]
        if not subject and not label:
            continue
        if subject not in known:
            problem("template", f"template {subject!r} is not among the BBQ templates read "
                                f"(expected an ID such as {next(iter(sorted(known)), 'bbq:Age:1')!r})")
            continue
        if subject in labels:
            problem("template", f"{subject} already has a final label at row {labels[subject].where.row}")
            continue
        if not label:
            continue
        if label not in ANNOTATOR_LABELS:
            problem("label", f"label {row['label']!r} is not one of {', '.join(ANNOTATOR_LABELS)}")
            continue
        if require_rationale and not rationale:
            problem("rationale", f"{subject} has label {label} but no rationale (the profile requires one)")
            continue
        labels[subject] = FinalLabel(subject, label, rationale, Location(path.name, number))
    raise_if_errors(f"consensus file {path.name}", findings)
    decisions = [d for final in labels.values() for d in consensus_decisions(final, (annotations or {}).get(final.subject))]
    return Consensus(path, labels, decisions)


def consensus_decisions(final: FinalLabel, votes: dict[str, str] | None) -> list[Decision]:
    """The label decision, plus the exclusion decision of an SR template."""
    numbers: dict[str, object] = {"label": final.label}
    vote_text, override = "", False
    if votes:
        counts = Counter(votes.values())
        top = max(counts.values())
        numbers.update({"annotators": len(votes), "votes": dict(sorted(counts.items()))})
        vote_text = " Annotators: " + ", ".join(f"{label} {n}" for label, n in sorted(counts.items())) + "."
        override = counts.get(final.label, 0) < top
        if override:
            vote_text += f" The consensus differs from the most-voted label ({top} of {len(votes)})."
    decisions = [Decision(
        stage=STAGE, subject_type="bbq_template", subject=final.subject, rule="consensus-label",
        outcome=final.label, reason=f"Consensus label {final.label} ({LABEL_MEANINGS[final.label]}): "
                                    f"{final.rationale or '(no rationale)'}.{vote_text}",
        numbers=numbers, override=override, source=str(final.where))]
    if final.label == SR:
        decisions.append(Decision(
            stage=STAGE, subject_type="bbq_template", subject=final.subject, rule="sample-removed",
            outcome="drop", reason="Labelled SR at consensus: excluded from translation and from the survey.",
            numbers={"label": SR}, source=str(final.where)))
    return decisions


def require_final_labels(templates: list[BBQTemplate], consensus: Consensus) -> None:
    """Refuse to go on while any BBQ template has no final label: every one must be decided."""
    if missing := [item for item in group_templates(templates) if item.subject not in consensus.labels]:
        listed = ", ".join(item.subject for item in missing[:20]) + (" ..." if len(missing) > 20 else "")
        raise UserError(f"{len(missing)} BBQ template(s) have no final label in the consensus file: {listed}. "
                        "Decide them (label and rationale) before translation.", consensus.path)
