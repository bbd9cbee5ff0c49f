"""Labelling workbooks, import checks, agreement and consensus on small realistic BBQ templates."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from openpyxl import load_workbook

from core.errors import UserError
from core.profile import load_profile
from tasks.templates.bbq import load_bbq_templates
from tasks.labels.agreement import agreement, draft_consensus_rows
from tasks.labels.annotations import import_annotations, votes_by_template
from adapted import templates_to_adapt
from tasks.labels.consensus import load_consensus, require_final_labels
from core.findings import FindingsError
from tasks.labels.template_set import group_templates
from tasks.labels.annotations import write_workbook

BBQ_HEADER = ["Q_id", "Category", "version", "Ambiguous_Context", "Disambiguating_Context",
              "Question_negative_stereotype", "Question_non_negative", "Answer_negative", "Answer_non_negative",
              "Relevant_social_values", "Known_stereotyped_groups"]
AGE = {"1": "forgetful", "2": "bad with technology", "3": "slow at work"}
RELIGION = {"1": "violent", "2": "=greedy"}  # a cell starting with "=" must stay text


def write_bbq(folder: Path, category: str, stereotypes: dict[str, str], twist: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"new_templates - {category}.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(BBQ_HEADER)
        for q_id, stereotype in stereotypes.items():
            for version in ("a", "b"):
                writer.writerow([q_id, category, version,
                                 f"I met {{{{NAME1}}}} and {{{{NAME2}}}} at the library.{twist}",
                                 f"{{{{NAME{1 if version == 'a' else 2}}}}} was the {stereotype} one.",
                                 f"Who was {stereotype}?", f"Who was not {stereotype}?", "{{NAME1}}",
                                 "{{NAME2}}", stereotype, "old" if category == "Age" else "Muslim"])


@pytest.fixture()
def bbq(tmp_path: Path):
    folder = tmp_path / "bbq"
    write_bbq(folder, "Age", AGE)
    write_bbq(folder, "Religion", RELIGION)
    templates, findings = load_bbq_templates(folder)
    assert findings == []
    return templates


def fill(path: Path, labels: dict[str, tuple[str, str]]) -> None:
    """What an annotator does: choose labels and write rationales in the unlocked cells."""
    workbook = load_workbook(path)
    sheet = workbook["labels"]
    header = [c.value for c in sheet[1]]
    for row in sheet.iter_rows(min_row=2):
        label, rationale = labels.get(row[0].value, ("", ""))
        row[header.index("label")].value = label
        row[header.index("rationale")].value = rationale
    workbook.save(path)


VOTES = {  # subject -> labels of kim, lee, park
    "bbq:Age:1": ("ST", "ST", "ST"), "bbq:Age:2": ("ST", "ST", "TM"), "bbq:Age:3": ("SR", "SR", "SR"),
    "bbq:Religion:1": ("TM", "TM", "TM"), "bbq:Religion:2": ("SR", "TM", "SR"),
}
ANNOTATORS = ("kim", "lee", "park")


def filled_workbooks(tmp_path: Path, bbq, votes=VOTES) -> list[Path]:
    items = group_templates(bbq)
    paths = []
    for i, annotator in enumerate(ANNOTATORS):
        path = write_workbook(items, tmp_path / f"labels_{annotator}.xlsx", annotator, load_profile("ko"))
        fill(path, {subject: (labels[i], f"{annotator} thinks {labels[i]}") for subject, labels in votes.items()})
        paths.append(path)
    return paths


def test_workbook_locks_everything_but_label_and_rationale(tmp_path: Path, bbq):
    items = group_templates(bbq)
    path = write_workbook(items, tmp_path / "labels_kim.xlsx", "kim", load_profile("ko"))
    workbook = load_workbook(path)
    sheet = workbook["labels"]
    header = [c.value for c in sheet[1]]
    assert sheet.protection.sheet
    assert sheet.max_row == 1 + 5  # one row per template (5 Q_ids), not per version (10 rows)
    row = sheet[2]
    assert row[0].value == "bbq:Age:1" and row[header.index("versions")].value == "a, b"
    # versions a and b differ in the disambiguating context: both are shown
    assert row[header.index("disambiguating context")].value.splitlines() == [
        "a: {{NAME1}} was the forgetful one.", "b: {{NAME2}} was the forgetful one."]
    unlocked = {header[c.column - 1] for c in row if not c.protection.locked}
    assert unlocked == {"label", "rationale"}
    (validation,) = sheet.data_validations.dataValidation
    assert validation.formula1 == '"ST,TM,SR"' and str(validation.sqref) == "K2:K6"
    assert workbook["meta"].sheet_state == "veryHidden"
    formula_like = sheet.cell(6, header.index("relevant social values") + 1)
    assert (formula_like.value, formula_like.data_type) == ("=greedy", "s")
    again = write_workbook(items, tmp_path / "again.xlsx", "kim", load_profile("ko"))
    assert again.read_bytes() == path.read_bytes()


def test_import_and_agreement(tmp_path: Path, bbq):
    items = group_templates(bbq)
    annotators = import_annotations(filled_workbooks(tmp_path, bbq), items, require_rationale=True)
    report = agreement(annotators, items)
    overall, age, religion = report.rows
    # Hand computation (Fleiss 1971) for the 5 x 3 votes above: P_i = 1, 1/3, 1, 1, 1/3 -> mean 11/15;
    # label shares ST 5/15, TM 5/15, SR 5/15 -> P_e = 1/3; kappa = (11/15 - 1/3) / (2/3) = 3/5.
    assert overall.kappa == pytest.approx(0.6)
    assert (overall.unanimous, overall.templates, overall.raw_agreement) == (3, 5, 0.6)
    assert overall.label_counts == {"ST": 5, "TM": 5, "SR": 5}
    # Age: P_i = 1, 1/3, 1 -> 7/9; shares ST 5/9, TM 1/9, SR 3/9 -> P_e = 35/81; kappa = (63-35)/(81-35) = 14/23
    assert age.kappa == pytest.approx(14 / 23)
    assert religion.unanimous == 1 and religion.templates == 2
    assert [d.subject for d in report.disagreements] == ["bbq:Age:2", "bbq:Religion:2"]
    assert "park: TM - park thinks TM" in report.text


def test_kappa_is_not_available_when_one_label_is_used_throughout(tmp_path: Path, bbq):
    items = group_templates(bbq)
    same = {subject: ("ST", "ST", "ST") for subject in VOTES}
    report = agreement(import_annotations(filled_workbooks(tmp_path, bbq, same), items, True), items)
    assert report.rows[0].kappa is None and report.rows[0].raw_agreement == 1.0
    assert "n/a" in report.text and report.disagreements == []


def test_bad_workbooks_name_the_cell_and_import_nothing(tmp_path: Path, bbq):
    items = group_templates(bbq)
    kim, lee, park = filled_workbooks(tmp_path, bbq)
    workbook = load_workbook(kim)
    sheet = workbook["labels"]
    sheet["K3"] = "Simply transferred"  # unknown label
    sheet["L4"] = None  # missing rationale
    sheet.protection.sheet = False
    sheet["A5"] = "bbq:Age:99"  # a template ID that does not exist
    workbook.save(kim)
    with pytest.raises(FindingsError) as raised:
        import_annotations([kim, lee, park], items, require_rationale=True)
    message = str(raised.value)
    assert "labels_kim.xlsx, sheet labels, row 3, column label (cell K3): unknown label 'Simply transferred'" in message
    assert "row 4, column rationale (cell L4)" in message and "without a rationale" in message
    assert "row 5, column template (cell A5): template ID 'bbq:Age:99' does not exist" in message
    assert "1 template(s) of the set are not labelled: bbq:Religion:1" in message
    assert "nothing was imported" in message
    # The same file passes the rationale check when the profile does not require one.
    with pytest.raises(FindingsError) as raised:
        import_annotations([kim], items, require_rationale=False)
    assert "rationale" not in str(raised.value)


def test_workbook_for_another_template_set_is_refused(tmp_path: Path, bbq):
    paths = filled_workbooks(tmp_path, bbq)
    edited = tmp_path / "edited"
    write_bbq(edited, "Age", AGE, twist=" It was raining.")
    write_bbq(edited, "Religion", RELIGION)
    other_items = group_templates(load_bbq_templates(edited)[0])
    with pytest.raises(FindingsError) as raised:
        import_annotations(paths[:1], other_items, require_rationale=True)
    assert "labels_kim.xlsx, sheet meta: this workbook was exported for another template set" in str(raised.value)


def test_csv_equivalent_is_read_like_a_workbook(tmp_path: Path, bbq):
    items = group_templates(bbq)
    paths = []
    for i, annotator in enumerate(ANNOTATORS):
        path = tmp_path / f"{annotator}.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["template", "label", "rationale"])
            writer.writerows([subject, labels[i], "because"] for subject, labels in VOTES.items())
        paths.append(path)
    annotators = import_annotations(paths, items, require_rationale=True)
    assert [a.annotator for a in annotators] == list(ANNOTATORS)
    assert agreement(annotators, items).rows[0].kappa == pytest.approx(0.6)


def write_consensus_file(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["template", "label", "rationale"])
        writer.writerows(rows)
    return path


def test_consensus_decisions_and_sr_exclusion(tmp_path: Path, bbq):
    items = group_templates(bbq)
    annotators = import_annotations(filled_workbooks(tmp_path, bbq), items, True)
    draft = draft_consensus_rows(annotators, items)
    assert [(r["template"], r["label"]) for r in draft] == [
        ("bbq:Age:1", "ST"), ("bbq:Age:2", ""), ("bbq:Age:3", "SR"), ("bbq:Religion:1", "TM"), ("bbq:Religion:2", "")]
    path = write_consensus_file(tmp_path / "consensus.csv", [
        ["bbq:Age:1", "ST", "unanimous"], ["bbq:Age:2", "TM", "the stereotype targets the elderly in Korea too"],
        ["bbq:Age:3", "SR", "unanimous"], ["bbq:Religion:1", "TM", "unanimous"],
        ["bbq:Religion:2", "", ""]])
    consensus = load_consensus(path, bbq, require_rationale=True, annotations=votes_by_template(annotators))
    with pytest.raises(UserError, match=r"1 BBQ template\(s\) have no final label.*bbq:Religion:2"):
        require_final_labels(bbq, consensus)
    age2 = next(d for d in consensus.decisions if d.subject == "bbq:Age:2")
    # 2 ST votes against 1 TM: the meeting chose the minority label, an override of the majority
    assert age2.outcome == "TM" and age2.override and age2.numbers["votes"] == {"ST": 2, "TM": 1}
    dropped = [d for d in consensus.decisions if d.outcome == "drop"]
    assert [(d.subject, d.rule) for d in dropped] == [("bbq:Age:3", "sample-removed")]
    assert "excluded from translation and from the survey" in dropped[0].reason

    complete = write_consensus_file(tmp_path / "complete.csv", [
        ["bbq:Age:1", "ST", "x"], ["bbq:Age:2", "TM", "x"], ["bbq:Age:3", "SR", "x"],
        ["bbq:Religion:1", "TM", "x"], ["bbq:Religion:2", "sr", "x"]])
    consensus = load_consensus(complete, bbq)
    require_final_labels(bbq, consensus)
    kept = templates_to_adapt(bbq, consensus)
    assert sorted({t.subject for t in kept}) == ["bbq:Age:1", "bbq:Age:2", "bbq:Religion:1"]
    assert len(kept) == 6  # both versions of each kept template


def test_bad_consensus_rows_are_named(tmp_path: Path, bbq):
    path = write_consensus_file(tmp_path / "consensus.csv", [
        ["bbq:Age:1", "ST", ""], ["bbq:Age:7", "ST", "x"], ["bbq:Age:2", "XX", "x"], ["bbq:Age:2", "ST", "x"]])
    with pytest.raises(FindingsError) as raised:
        load_consensus(path, bbq, require_rationale=True)
    message = str(raised.value)
    assert "consensus.csv, row 2, column rationale: bbq:Age:1 has label ST but no rationale" in message
    assert "row 3, column template: template 'bbq:Age:7' is not among the BBQ templates read" in message
    assert "row 4, column label: label 'XX' is not one of ST, TM, SR" in message
    assert "4 problem(s)" not in message and "3 problem(s)" in message
