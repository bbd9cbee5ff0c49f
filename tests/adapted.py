"""The BBQ rows a consensus sends on to translation, as the tests pick them (a pipeline reads them from the
labels stage's file: ``tasks.translation.pretranslate.translatable``)."""

from __future__ import annotations

from tasks.labels.consensus import Consensus, require_final_labels
from tasks.labels.template_set import KEPT_LABELS
from tasks.templates.bbq import BBQTemplate


def templates_to_adapt(templates: list[BBQTemplate], consensus: Consensus) -> list[BBQTemplate]:
    """The rows of ST and TM templates (SR ones are excluded); every template must have its final label."""
    require_final_labels(templates, consensus)
    return [row for row in templates if consensus.labels[row.subject].label in KEPT_LABELS]
