"""The shipped labelling example: three annotators, three disagreements, a complete consensus."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kobbq.paths import EXAMPLE_DIR
from tasks.bbq import load_bbq_templates
from tasks.labels.agreement import agreement
from tasks.labels.annotations import import_annotations, votes_by_template
from tasks.labels.consensus import load_consensus, require_final_labels, templates_to_adapt
from tasks.labels.template_set import group_templates

LABELS = EXAMPLE_DIR / "labels"
ANNOTATORS = sorted((LABELS / "annotators").glob("*.csv"))
CONSENSUS = LABELS / "consensus.csv"


def example_ids() -> list[str]:
    with CONSENSUS.open(encoding="utf-8") as handle:
        return [row["template"] for row in csv.DictReader(handle)]


def stand_in_bbq(folder: Path) -> Path:
    """BBQ-format rows for exactly the example's template IDs (a stand-in for the example BBQ files)."""
    folder.mkdir()
    by_category: dict[str, list[str]] = {}
    for subject in example_ids():
        _, category, q_id = subject.split(":")
        by_category.setdefault(category, []).append(q_id)
    for category, q_ids in by_category.items():
        with (folder / f"new_templates - {category}.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["Q_id", "Category", "version", "Ambiguous_Context", "Disambiguating_Context",
                             "Question_negative_stereotype", "Question_non_negative", "Answer_negative",
                             "Answer_non_negative"])
            for q_id in q_ids:
                for version in "ab":
                    writer.writerow([q_id, category, version, "{{NAME1}} and {{NAME2}} met.", f"{version}.",
                                     "Who?", "Who not?", "{{NAME1}}", "{{NAME2}}"])
    return folder


def bbq_sources(tmp_path: Path) -> list[Path]:
    sources = [stand_in_bbq(tmp_path / "stand_in")]
    if (EXAMPLE_DIR / "bbq").exists():
        sources.append(EXAMPLE_DIR / "bbq")
    return sources


def test_example_annotators_agreement_and_consensus(tmp_path: Path, ko_profile):
    assert [p.stem for p in ANNOTATORS] == ["kim", "lee", "park"]
    for source in bbq_sources(tmp_path):
        wanted = sorted({s.split(":")[1] for s in example_ids()})
        templates, _ = load_bbq_templates(source, wanted)
        items = group_templates(templates)
        annotators = import_annotations(ANNOTATORS, items, ko_profile.labels.require_rationale)
        report = agreement(annotators, items)
        assert [d.subject for d in report.disagreements] == ["bbq:Age:2", "bbq:Religion:2", "bbq:SES:2"]
        # By hand: P_i = 1 for 5 templates, 1/3 for 3 -> mean 3/4; label shares ST 6/24, TM 15/24,
        # SR 3/24 -> P_e = 15/32; kappa = (3/4 - 15/32) / (1 - 15/32) = 9/17.
        assert report.rows[0].kappa == pytest.approx(9 / 17)
        consensus = load_consensus(CONSENSUS, templates, ko_profile.labels.require_rationale,
                                   votes_by_template(annotators))
        require_final_labels(templates, consensus)
        assert [d.subject for d in consensus.decisions if d.outcome == "drop"] == ["bbq:Religion:2"]
        assert "bbq:Religion:2" not in {t.subject for t in templates_to_adapt(templates, consensus)}
