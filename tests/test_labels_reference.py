"""Reference labels derived from the release: checked against the paper's Table 1 and the raw files."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from tasks.templates.bbq import load_bbq_templates
from tasks.labels.labels_stage import UNLINKED, reference_labels
from tasks.templates.load import load_kobbq_templates

# The paper's Table 1 (Jin et al. 2024), typed in from the paper, not from the profile.
PAPER_ST = {"Age": 20, "Disability_status": 20, "Gender_identity": 25, "Physical_appearance": 17,
            "Race_ethnicity_nationality": 0, "Religion": 4, "SES": 16, "Sexual_orientation": 5}
PAPER_TM = {"Race_ethnicity_nationality": 33, "Religion": 7, "SES": 1, "Sexual_orientation": 1}
PAPER_NC_TOTAL = 119


@pytest.fixture(scope="module")
def real_reference(kobbq_templates_tsv: Path, bbq_templates_dir: Path, ko_profile):
    bbq, _ = load_bbq_templates(bbq_templates_dir)
    loaded = load_kobbq_templates(kobbq_templates_tsv)
    return reference_labels(loaded.templates, bbq, ko_profile), bbq_templates_dir


@pytest.mark.realdata
def test_linked_counts_reproduce_table_1(real_reference):
    result, _ = real_reference
    rows = {row.category: row for row in result.rows}
    for category, st in PAPER_ST.items():
        assert rows[category].linked_st == st, category
        assert rows[category].linked_tm == PAPER_TM.get(category, 0), category
    assert sum(row.nc for row in rows.values()) == PAPER_NC_TOTAL
    assert "33 (33)" in result.text and "107 (107)" in result.text


@pytest.mark.realdata
def test_every_bbq_template_has_one_decision_and_no_invented_sr(real_reference):
    result, bbq_dir = real_reference
    # Distinct (file, Q_id) read straight from the CSVs, independently of tasks.templates.bbq.
    expected = set()
    for path in bbq_dir.glob("new_templates - *.csv"):
        category = path.stem.removeprefix("new_templates - ")
        if category in ("Filler_items", "Race_x_SES", "Race_x_gender"):
            continue
        with path.open(encoding="utf-8", newline="") as handle:
            expected |= {f"bbq:{category}:{row['Q_id'].strip()}" for row in csv.DictReader(handle)}
    bbq_decisions = [d for d in result.decisions if d.subject_type == "bbq_template"]
    assert sorted(d.subject for d in bbq_decisions) == sorted(expected)
    outcomes = Counter(d.outcome for d in bbq_decisions)
    assert set(outcomes) == {"ST", "TM", UNLINKED}  # never "SR": the files cannot tell SR from survey drops
    assert outcomes[UNLINKED] == len(expected) - 107 - 42
    unlinked = next(d for d in bbq_decisions if d.outcome == UNLINKED)
    assert "do not say which" in unlinked.reason


@pytest.mark.realdata
def test_nationality_22_is_linked_by_race_templates_40_and_41(real_reference):
    result, _ = real_reference
    assert result.shared_links == {"bbq:Nationality:22": ("Race_ethnicity_nationality|40",
                                                          "Race_ethnicity_nationality|41")}
    decision = next(d for d in result.decisions if d.subject == "bbq:Nationality:22")
    assert decision.outcome == "TM" and decision.numbers["linked_templates"] == 2
    assert result.findings == []


BBQ_HEADER = ["Q_id", "Category", "version", "Ambiguous_Context", "Disambiguating_Context",
              "Question_negative_stereotype", "Question_non_negative", "Answer_negative", "Answer_non_negative",
              "Relevant_social_values", "Known_stereotyped_groups"]


def write_bbq(folder: Path, category: str, q_ids: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"new_templates - {category}.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(BBQ_HEADER)
        for q_id in q_ids:
            for version in ("a", "b"):
                writer.writerow([q_id, category, version, f"{{{{NAME1}}}} and {{{{NAME2}}}} met ({q_id})",
                                 "{{NAME1}} left.", "Who was rude?", "Who was kind?", "{{NAME1}}", "{{NAME2}}",
                                 "rudeness", "old"])


def test_bad_links_are_findings_not_labels(tmp_path: Path, ko_profile):
    from core.paths import EXAMPLE_TEMPLATES
    from tasks.templates.load import read_tsv

    write_bbq(tmp_path / "bbq", "Age", ["1", "2"])
    header, rows, _ = read_tsv(EXAMPLE_TEMPLATES)
    rows = [r for r in rows if r["Category"] == "Age"]
    for row in rows:
        if row["ID"] == "2":  # an NC template that claims a BBQ source that does not exist
            row["BBQ_id"], row["BBQ_category"] = "9", "Age"
    tsv = tmp_path / "ko.tsv"
    with tsv.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    bbq, _ = load_bbq_templates(tmp_path / "bbq")
    result = reference_labels(load_kobbq_templates(tsv).templates, bbq, ko_profile)
    codes = sorted(f.code for f in result.findings)
    assert codes == ["nc-with-link", "unknown-bbq-link"]
    outcomes = {d.subject: d.outcome for d in result.decisions}
    assert outcomes == {"bbq:Age:1": "ST", "bbq:Age:2": UNLINKED}
    age = next(row for row in result.rows if row.category == "Age")
    assert (age.bbq_templates, age.linked_st, age.unlinked, age.nc) == (2, 1, 1, 0)
