"""The shipped labelling example: three annotators on the example BBQ templates, a complete consensus."""

from __future__ import annotations

import csv
from fractions import Fraction

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_DIR
from tasks.templates.bbq import load_bbq_templates
from tasks.labels.agreement import agreement
from tasks.labels.annotations import import_annotations, votes_by_template
from adapted import templates_to_adapt
from tasks.labels.consensus import load_consensus, require_final_labels
from tasks.labels.template_set import group_templates

LABELS = EXAMPLE_DIR / "labels"
BBQ = EXAMPLE_DIR / "bbq"
ANNOTATORS = sorted((LABELS / "annotators").glob("*.csv"))
CONSENSUS = LABELS / "consensus.csv"


def fleiss(counts: list[tuple[int, ...]]) -> Fraction:
    """Fleiss' kappa from per-template label counts, in exact fractions (the textbook formula)."""
    raters = sum(counts[0])
    observed = sum(Fraction(sum(c * (c - 1) for c in row), raters * (raters - 1)) for row in counts) / len(counts)
    totals = [sum(row[i] for row in counts) for i in range(len(counts[0]))]
    chance = sum(Fraction(t, raters * len(counts)) ** 2 for t in totals)
    return (observed - chance) / (1 - chance)


def test_example_annotators_agreement_and_consensus(ko_profile):
    assert [p.stem for p in ANNOTATORS] == ["kim", "lee", "park"]
    templates, findings = load_bbq_templates(BBQ)
    assert not findings
    items = group_templates(templates)
    annotators = import_annotations(ANNOTATORS, items, ko_profile.labels.require_rationale)
    report = agreement(annotators, items)
    assert [d.subject for d in report.disagreements] == ["bbq:Age:2", "bbq:Religion:2", "bbq:SES:1"]
    # The votes (kim, lee, park) as counts (ST, TM, SR):
    #   Age:1 ST ST ST (3,0,0)   Age:2 SR SR ST (1,0,2)   Race_ethnicity:1 TM TM TM (0,3,0)
    #   Race_ethnicity:2 SR SR SR (0,0,3)   Religion:1 TM TM TM (0,3,0)   Religion:2 SR SR TM (0,1,2)
    #   SES:1 TM TM ST (1,2,0)   SES:2 SR SR SR (0,0,3)
    # All: P_i = 1 for 5 templates and (2*1)/(3*2) = 1/3 for 3 -> mean (5 + 1)/8 = 3/4; label shares
    # ST 5/24, TM 9/24, SR 10/24 -> P_e = (25 + 81 + 100)/576 = 103/288;
    # kappa = (3/4 - 103/288) / (1 - 103/288) = 113/185; raw agreement 5/8 unanimous.
    # Age: mean P 2/3, shares ST 4/6, SR 2/6 -> P_e 5/9, kappa (2/3 - 5/9)/(4/9) = 1/4; Religion the same
    # with TM for ST. Race_ethnicity: P 1, P_e 1/2 -> 1. SES: mean P 2/3, shares 1/6, 2/6, 3/6 -> P_e 7/18,
    # kappa (2/3 - 7/18)/(11/18) = 5/11.
    expected = {"all": (Fraction(113, 185), 5), "Age": (Fraction(1, 4), 1), "Race_ethnicity": (Fraction(1), 2),
                "Religion": (Fraction(1, 4), 1), "SES": (Fraction(5, 11), 1)}
    assert [r.scope for r in report.rows] == list(expected)
    for row in report.rows:
        kappa, unanimous = expected[row.scope]
        assert (row.kappa, row.unanimous) == (pytest.approx(float(kappa)), unanimous), row.scope
    assert fleiss([(3, 0, 0), (1, 0, 2), (0, 3, 0), (0, 0, 3), (0, 3, 0), (0, 1, 2), (1, 2, 0), (0, 0, 3)]) \
        == expected["all"][0]
    assert report.rows[0].raw_agreement == 5 / 8
    assert report.rows[0].label_counts == {"ST": 5, "TM": 9, "SR": 10}

    consensus = load_consensus(CONSENSUS, templates, ko_profile.labels.require_rationale,
                               votes_by_template(annotators))
    require_final_labels(templates, consensus)
    assert {s: f.label for s, f in consensus.labels.items()} == {
        "bbq:Age:1": "ST", "bbq:Age:2": "SR", "bbq:Race_ethnicity:1": "TM", "bbq:Race_ethnicity:2": "SR",
        "bbq:Religion:1": "TM", "bbq:Religion:2": "SR", "bbq:SES:1": "TM", "bbq:SES:2": "SR"}
    dropped = ["bbq:Age:2", "bbq:Race_ethnicity:2", "bbq:Religion:2", "bbq:SES:2"]
    assert sorted(d.subject for d in consensus.decisions if d.outcome == "drop") == dropped
    adapted = templates_to_adapt(templates, consensus)
    assert sorted({t.subject for t in adapted}) == ["bbq:Age:1", "bbq:Race_ethnicity:1", "bbq:Religion:1", "bbq:SES:1"]
    assert len(adapted) == 2 + 2 + 2 + 4  # Race_ethnicity:1 has versions a-d


def test_the_stage_functions_label_the_example_and_write_labels_by_subject(ko_profile, tmp_path):
    from tasks.labels.labels_stage import final_labels, write_labels

    labels = final_labels(BBQ, CONSENSUS, ANNOTATORS, ko_profile)
    # consensus.csv: ST Age:1; TM Race_ethnicity:1, Religion:1, SES:1; SR Age:2, Race_ethnicity:2, Religion:2, SES:2
    assert labels.counts() == {"SR": 4, "ST": 1, "TM": 3}
    assert labels.annotator_files == 3 and len(labels.agreement.disagreements) == 3
    written = write_labels(labels, tmp_path)
    assert set(written) == {"labels", "report:labels_agreement.txt"}
    with written["labels"].open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["subject", "label", "rationale"] and len(rows) == 9
    assert [row[0] for row in rows[1:]] == sorted(row[0] for row in rows[1:])
    assert rows[1][:2] == ["bbq:Age:1", "ST"] and rows[-1][:2] == ["bbq:SES:2", "SR"]
    assert "Fleiss" in written["report:labels_agreement.txt"].read_text(encoding="utf-8")


def test_templates_not_taken_are_counted_nowhere(tmp_path, ko_profile):
    """A subset by SR labels put templates nobody judged into the agreement figures and the removed counts; the
    templates not taken into the release (the US-specific :2 ones here) are left out of both."""
    from tasks.labels.labels_stage import final_labels

    not_taken = ["bbq:Age:2", "bbq:Race_ethnicity:2", "bbq:Religion:2", "bbq:SES:2"]

    def taken(path):  # the file as people write it for the subset: no row for a template not taken
        copy = tmp_path / path.name
        rows = path.read_text(encoding="utf-8").splitlines(keepends=True)
        copy.write_text("".join(r for r in rows if r.split(",")[0] not in not_taken), encoding="utf-8")
        return copy

    labels = final_labels(BBQ, taken(CONSENSUS), [taken(p) for p in ANNOTATORS], ko_profile, not_taken=not_taken)
    assert labels.counts() == {"ST": 1, "TM": 3}  # no SR: nobody removed a template
    assert {d.subject for d in labels.consensus.decisions}.isdisjoint(not_taken)
    everything = labels.agreement.rows[0]
    # Age:1 ST ST ST, Race_ethnicity:1 TM TM TM, Religion:1 TM TM TM, SES:1 TM TM ST: 3 of 4 unanimous.
    assert (everything.templates, everything.unanimous, everything.label_counts) == (4, 3, {"ST": 4, "TM": 8,
                                                                                            "SR": 0})
    with pytest.raises(UserError, match="not taken: bbq:Age:9 is not among the BBQ templates read"):
        final_labels(BBQ, CONSENSUS, [], ko_profile, not_taken=["bbq:Age:9"])
