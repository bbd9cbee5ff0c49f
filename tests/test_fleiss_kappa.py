"""Fleiss' kappa against published and previously computed reference values, not against itself."""

from __future__ import annotations

import pytest

from core.paths import EXAMPLE_DIR
from tasks.labels.agreement import agreement, fleiss_kappa, label_counts
from tasks.labels.annotations import import_annotations
from tasks.labels.template_set import group_templates
from tasks.templates.bbq import load_bbq_templates

# Wikipedia, "Fleiss' kappa", worked example: 14 raters put 10 subjects into 5 categories; kappa = 0.210.
WIKIPEDIA = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_the_wikipedia_worked_example():
    # The article's intermediate figures: P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.210, abs=5e-4)
    # statsmodels 0.15.0, fleiss_kappa(table, method="fleiss") on the same table, before it was replaced.
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.20993070442195522, rel=1e-12)


def test_undefined_where_one_category_is_used_throughout_or_nothing_was_rated():
    assert fleiss_kappa([[3, 0, 0], [3, 0, 0]]) is None
    assert fleiss_kappa([]) is None


def test_perfect_agreement_is_one_and_rows_of_unequal_raters_are_refused():
    assert fleiss_kappa([[2, 0], [0, 2]]) == 1.0
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [0, 3]])


def test_label_counts_follow_the_annotator_labels_order():
    assert label_counts([["SR", "ST", "SR"], ["TM", "TM", "TM"]]) == [[1, 0, 2], [0, 3, 0]]


def test_the_example_annotators_give_the_values_statsmodels_gave(ko_profile):
    """statsmodels 0.15.0 (aggregate_raters + fleiss_kappa) on the shipped example labels, recorded before
    it was replaced; the report prints three decimals, so these equal the released labels_agreement.txt."""
    statsmodels = {"all": 0.6108108108108108, "Age": 0.24999999999999986, "Race_ethnicity": 1.0,
                   "Religion": 0.24999999999999986, "SES": 0.4545454545454544}
    templates, _ = load_bbq_templates(EXAMPLE_DIR / "bbq")
    items = group_templates(templates)
    files = sorted((EXAMPLE_DIR / "labels" / "annotators").glob("*.csv"))
    report = agreement(import_annotations(files, items, ko_profile.labels.require_rationale), items)
    assert {row.scope: row.kappa for row in report.rows} == pytest.approx(statsmodels, rel=1e-12)
