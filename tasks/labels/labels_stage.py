"""The labels stage: every English BBQ template gets its final label (ST / TM / SR) and rationale.

Inputs: the BBQ templates, the annotators' files (optional) and their consensus; or, in
real-data mode, a released template file whose BBQ links imply the labels. Outputs: ``labels``
(``labels.csv``: subject, label, rationale) and the agreement report (Fleiss' kappa).

The stage's functions are the one path for every entry point: ``final_labels`` and ``write_labels``
(the pipeline's ``run`` below, which ``kobbq labels consensus`` runs alone),
``labels_from_links`` and ``write_reference`` (real-data mode, and ``kobbq labels reference``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from core.atomic import write_text
from core.console import counts_text
from core.errors import UserError
from core.profile import Profile
from core.text import allowed_characters
from core.tables import write_csv_rows
from tasks.labels.agreement import AgreementReport, agreement, agreement_table
from tasks.labels.annotations import import_annotations, votes_by_template
from tasks.labels.consensus import Consensus, load_consensus, require_final_labels
from tasks.labels.reference import ReferenceLabels, reference_labels
from tasks.labels.template_set import LabelItem, load_label_items
from core.stage_contract import Context, Stage, StageOutput, require
from tasks.templates.stage_templates import TEMPLATE_SETTINGS, checked_templates
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.load import TemplateRow

NAME = "labels"
LABELS_COLUMNS = ["subject", "label", "rationale"]


@dataclass(frozen=True)
class FinalLabels:
    """What the labels stage decided: the items labelled, the consensus (labels and decisions) and,
    with annotators' files, their agreement."""

    items: list[LabelItem]
    consensus: Consensus
    agreement: AgreementReport | None  # None without annotators' files
    annotator_files: int

    def counts(self) -> dict[str, int]:
        """Final label -> BBQ templates, in label order."""
        return dict(sorted(Counter(f.label for f in self.consensus.labels.values()).items()))


def final_labels(bbq: Path, consensus: Path, annotations: list[Path], profile: Profile,
                 categories: list[str] | None = None, not_taken: list[str] | None = None) -> FinalLabels:
    """Every BBQ template's final label from the consensus file, the annotators' votes recorded beside it;
    a template without a final label is an error (nothing is translated on a guess), one not taken into this
    release has none. Nothing is written."""
    bbq_rows, items = load_label_items(bbq, profile, categories, not_taken)
    report, votes = None, None
    if annotations:
        annotators = import_annotations(annotations, items, profile.labels.require_rationale, profile.name)
        report, votes = agreement(annotators, items), votes_by_template(annotators)
    final = load_consensus(consensus, bbq_rows, profile.labels.require_rationale, annotations=votes,
                           allowed=allowed_characters(profile))
    require_final_labels(bbq_rows, final)
    return FinalLabels(items, final, report, len(annotations))


def write_labels(labels: FinalLabels, folder: Path) -> dict[str, Path]:
    """``labels.csv`` (by subject) and, with annotators' files, ``agreement.txt``, by the role later stages
    and the release ask for them."""
    rows = [[s, f.label, f.rationale] for s, f in sorted(labels.consensus.labels.items())]
    outputs = {"labels": write_csv_rows(folder / "labels.csv", LABELS_COLUMNS, rows)}
    if labels.agreement is not None:
        outputs["report:labels_agreement.txt"] = write_text(folder / "agreement.txt", labels.agreement.text + "\n")
    return outputs


def labels_from_links(templates: list[TemplateRow], bbq: Path, profile: Profile) -> ReferenceLabels:
    """Real-data mode: the labels a released template file implies through its BBQ links."""
    bbq_rows, _ = load_bbq_templates(bbq)
    return reference_labels(templates, bbq_rows, profile)


def write_reference(result: ReferenceLabels, folder: Path) -> Path:
    return write_text(folder / "reference_labels.txt", result.text + "\n")


# --- the stage in a pipeline -------------------------------------------------------------------

def inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config.labels
    files = {"bbq": ctx.file(cfg.bbq), "consensus": ctx.file(cfg.consensus), "reference": ctx.file(cfg.reference),
             "corrections": ctx.corrections}
    files.update({f"annotations_{i}": p for i, p in enumerate(ctx.pipeline.files(cfg.annotations))})
    return files


def run(ctx: Context) -> StageOutput:
    cfg = ctx.pipeline.config.labels
    bbq_path = require(ctx.file(cfg.bbq), "English BBQ templates", "Set labels.bbq to their folder.")
    if cfg.reference:
        return _from_reference(ctx, bbq_path)
    profile = ctx.profile.argument
    subset = "".join(f" --not-taken {template}" for template in cfg.not_taken)
    consensus_path = require(ctx.file(cfg.consensus), "annotators' labels (the consensus file)",
                             f"Send the workbooks of `kobbq labels export --profile {profile} --bbq {bbq_path}{subset} "
                             f"--annotator NAME --out {ctx.work / NAME / 'workbooks'}` (one --annotator per person) to "
                             f"the annotators, compare their answers with `kobbq labels import --profile {profile} "
                             f"--bbq {bbq_path}{subset} FILES --draft draft.csv`, and write the final label and rationale of "
                             f"every template into the consensus file ({ctx.file(cfg.consensus) or 'labels.consensus'}).")
    annotations = ctx.pipeline.files(cfg.annotations)
    if cfg.annotations and not annotations:
        raise UserError(f"labels.annotations = {cfg.annotations} matches no file (patterns are relative to the "
                        "pipeline file); correct the pattern, or remove the line to go without the annotators' votes",
                        ctx.pipeline.path)
    labels = final_labels(bbq_path, consensus_path, annotations, ctx.profile, cfg.categories or None,
                          cfg.not_taken)
    counts = labels.counts()
    tables = {"agreement": agreement_table(labels.agreement)} if labels.agreement is not None else {}
    return StageOutput(counts, write_labels(labels, ctx.stage_dir(NAME)), labels.consensus.decisions,
                       f"final labels {counts_text(counts)} from {labels.annotator_files} annotator file(s) and the "
                       "consensus", tables)


def _from_reference(ctx: Context, bbq_path: Path) -> StageOutput:
    reference = require(ctx.file(ctx.pipeline.config.labels.reference), "reference template file", "")
    result = labels_from_links(checked_templates(ctx, reference)[0].templates, bbq_path, ctx.profile)
    report = write_reference(result, ctx.stage_dir(NAME))
    outcomes = dict(sorted(Counter(d.outcome.split(":")[0] for d in result.decisions).items()))
    return StageOutput(outcomes, {"report:labels_reference.txt": report}, result.decisions,
                       f"labels from the release's BBQ links: {counts_text(outcomes)}")


STAGE = Stage(NAME, inputs, run, settings=(*TEMPLATE_SETTINGS, "labels", "pipeline.labels.categories",
                                           "pipeline.labels.not_taken"))
