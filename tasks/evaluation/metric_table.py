"""Every metric ``kobbq eval`` reports, in one table: a new metric is one row here (and its computation).

The rest iterates over it: the score tables' columns and order (``tasks.evaluation.metrics``,
``tasks.evaluation.esbbq_metrics``), results.md's headings and the upstream results layout
(``tasks.evaluation.report``), what ``kobbq eval compare --metrics`` accepts (``tasks.evaluation.compare``) and
the lm-evaluation-harness task's metric list and directions (``tasks.evaluation.lm_eval_task``).

Families: ``paper``, the KoBBQ paper's five (computed per row of answers in ``metrics.ratios``, which the
exported harness task's ``utils.py``, ``lm_eval_metrics``, calls too); ``bbq``, BBQ's bias scores, for
comparison; ``esbbq``, EsBBQ's and CaBBQ's own four (``esbbq_metrics``, on their releases only).
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER, LOWER, ZERO = "higher", "lower", "zero"  # which way is better; ZERO: 0 is unbiased (|value|, lower)


@dataclass(frozen=True)
class Metric:
    name: str  # the column in every table
    title: str  # the heading in results.md and compare's tables
    better: str  # HIGHER, LOWER or ZERO
    family: str  # paper, bbq or esbbq
    upstream: str = ""  # the paper's results.tsv heading (paper metrics)


METRIC_TABLE = (
    Metric("ooc_ratio", "OOC", LOWER, "paper", "out-of-choice ratio"),
    Metric("acc_amb", "Acc amb", HIGHER, "paper", "accuracy in ambiguous contexts"),
    Metric("acc_dis", "Acc dis", HIGHER, "paper", "accuracy in disambiguated contexts"),
    Metric("diff_bias_amb", "Diff-bias amb", ZERO, "paper", "diff-bias in ambiguous contexts"),
    Metric("diff_bias_dis", "Diff-bias dis", ZERO, "paper", "diff-bias in disambiguated contexts"),
    Metric("s_dis", "BBQ s_DIS", ZERO, "bbq"),
    Metric("s_amb", "BBQ s_AMB", ZERO, "bbq"),
    Metric("acc_ambig", "acc_ambig", HIGHER, "esbbq"),  # upstream's names, as titles too
    Metric("acc_disambig", "acc_disambig", HIGHER, "esbbq"),
    Metric("bias_score_ambig", "bias_score_ambig", ZERO, "esbbq"),
    Metric("bias_score_disambig", "bias_score_disambig", ZERO, "esbbq"),
)
TITLES = {metric.name: metric.title for metric in METRIC_TABLE}


def family(name: str) -> list[Metric]:
    """The metrics of one family, in table order."""
    return [metric for metric in METRIC_TABLE if metric.family == name]


def names(family_name: str) -> list[str]:
    return [metric.name for metric in family(family_name)]
