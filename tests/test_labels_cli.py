"""``kobbq labels``: export -> annotators fill -> import (agreement) -> consensus flow; reference on the release."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from openpyxl import load_workbook

from kobbq.cli import main
from core.decisions import read_decisions

HEADER = ["Q_id", "Category", "version", "Ambiguous_Context", "Disambiguating_Context", "Question_negative_stereotype",
          "Question_non_negative", "Answer_negative", "Answer_non_negative", "Relevant_social_values",
          "Known_stereotyped_groups"]
TEMPLATES = {"Age": ["forgetful", "bad with phones"], "SES": ["lazy", "dishonest", "bad parents"]}
# subject -> (ann, bob) labels: SES 2 is the disagreement
VOTES = {"bbq:Age:1": ("ST", "ST"), "bbq:Age:2": ("ST", "ST"), "bbq:SES:1": ("TM", "TM"),
         "bbq:SES:2": ("ST", "SR"), "bbq:SES:3": ("SR", "SR")}


@pytest.fixture()
def bbq(tmp_path: Path) -> Path:
    folder = tmp_path / "bbq"
    folder.mkdir()
    for category, stereotypes in TEMPLATES.items():
        with (folder / f"new_templates - {category}.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            for q_id, stereotype in enumerate(stereotypes, start=1):
                for version in ("a", "b"):
                    writer.writerow([q_id, category, version, "{{NAME1}} and {{NAME2}} waited.",
                                     f"{{{{NAME1}}}} was {stereotype} ({version}).", f"Who was {stereotype}?",
                                     f"Who was not {stereotype}?", "{{NAME1}}", "{{NAME2}}", stereotype, "old"])
    return folder


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fill(path: Path, column: int) -> None:
    workbook = load_workbook(path)
    sheet = workbook["labels"]
    for row in sheet.iter_rows(min_row=2):
        row[10].value = VOTES[row[0].value][column]
        row[11].value = f"my reason for {row[10].value}"
    workbook.save(path)


@pytest.mark.flow
def test_export_import_consensus(tmp_path: Path, bbq: Path, capsys, prefect_harness):
    code, out, _ = run(capsys, "labels", "export", "--bbq", str(bbq), "--annotator", "ann", "--annotator", "bob",
                       "--out", str(tmp_path / "wb"))
    assert code == 0 and "5 templates" in out
    ann, bob = tmp_path / "wb" / "labels_ann.xlsx", tmp_path / "wb" / "labels_bob.xlsx"
    fill(ann, 0)
    fill(bob, 1)
    draft = tmp_path / "draft.csv"
    code, out, _ = run(capsys, "labels", "import", "--bbq", str(bbq), str(ann), str(bob), "--draft", str(draft))
    assert code == 0
    assert "1 template(s) with disagreement" in out and "bob: SR - my reason for SR" in out
    # 4 of 5 unanimous overall; per category Age 2/2 and SES 2/3
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in (["all"], ["Age"], ["SES"])}
    assert lines["all"][1:5] == ["5", "2", "4", "80.0%"] and lines["SES"][3:5] == ["2", "66.7%"]
    with draft.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["label"] for r in rows] == ["ST", "ST", "TM", "", "SR"]

    # The meeting decides SES 2; the consensus flow then writes labels and decisions.
    rows[3]["label"], rows[3]["rationale"] = "SR", "the stereotype is not held in Korea"
    consensus = tmp_path / "consensus.csv"
    with consensus.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "labels", "consensus", str(consensus), "--bbq", str(bbq), "--annotations", str(ann),
                       str(bob), "--out", str(out_dir))
    assert code == 0 and "5 BBQ templates: ST 2, TM 1, SR 2" in out
    decisions = read_decisions(out_dir / "decisions_labels.csv")
    assert sorted(d.subject for d in decisions if d.rule == "sample-removed") == ["bbq:SES:2", "bbq:SES:3"]
    ses2 = next(d for d in decisions if d.subject == "bbq:SES:2" and d.rule == "consensus-label")
    assert ses2.numbers["votes"] == {"SR": 1, "ST": 1} and not ses2.override
    with (out_dir / "labels.csv").open(encoding="utf-8") as handle:
        assert [(r["subject"], r["label"]) for r in csv.DictReader(handle)][3] == ("bbq:SES:2", "SR")


def test_import_error_is_one_paragraph_and_exit_1(tmp_path: Path, bbq: Path, capsys):
    run(capsys, "labels", "export", "--bbq", str(bbq), "--annotator", "ann", "--out", str(tmp_path))
    path = tmp_path / "labels_ann.xlsx"
    fill(path, 0)
    workbook = load_workbook(path)
    workbook["labels"]["K2"] = "maybe"
    workbook.save(path)
    code, _, err = run(capsys, "labels", "import", "--bbq", str(bbq), str(path), "--draft", str(tmp_path / "d.csv"))
    assert code == 1 and err.startswith("error: 1 problem(s)")
    assert "labels_ann.xlsx, sheet labels, row 2, column label (cell K2): unknown label 'maybe'" in err
    assert not (tmp_path / "d.csv").exists()


def test_reference_command_on_the_release(capsys, kobbq_templates_tsv: Path, bbq_templates_dir: Path, tmp_path: Path):
    code, out, _ = run(capsys, "labels", "reference", "--templates", str(kobbq_templates_tsv), "--bbq",
                       str(bbq_templates_dir), "--decisions", str(tmp_path / "d.csv"))
    assert code == 0
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert total.split()[1:6] == ["275", "107", "(107)", "42", "(42)"]
    assert len(read_decisions(tmp_path / "d.csv")) == 275 + 119


def test_reference_command_on_esbbq_reports_its_inconsistencies_and_exits_0(capsys, shared_data: Path):
    """The guide's command on EsBBQ exited 1 under "22 problem(s)": the release's own inconsistencies (one template
    labelled ST and TM, links into other categories) are what the links say, reported once each, not a failure."""
    code, out, err = run(capsys, "labels", "reference", "--profile", "es", "--templates",
                         str(shared_data / "esbbq" / "templates"), "--bbq", str(shared_data / "bbq" / "templates"))
    assert code == 0 and not err
    assert "The release's links are not consistent (1 error(s), 20 warning(s))" in out
    listed = [line for line in out.splitlines() if line.startswith(("  error:", "  warning:"))]
    assert len(listed) == 21 == len(set(listed))  # Gender|25 was listed twice, once per version row
    assert "LGBTQIA template 15 has rows with labels ST, TM [label-mismatch]" in listed[0]


def test_templates_not_taken_are_left_out_of_the_workbooks(tmp_path: Path, bbq: Path, capsys):
    code, out, _ = run(capsys, "labels", "export", "--bbq", str(bbq), "--annotator", "ann", "--not-taken",
                       "bbq:SES:3", "--not-taken", "bbq:Age:1", "--out", str(tmp_path / "wb"))
    assert code == 0 and "3 templates" in out  # 5 less the 2 not taken
    sheet = load_workbook(tmp_path / "wb" / "labels_ann.xlsx")["labels"]
    subjects = [row[0].value for row in sheet.iter_rows(min_row=2)]
    assert "bbq:SES:3" not in subjects and "bbq:Age:1" not in subjects and len(subjects) == 3
    code, _, err = run(capsys, "labels", "export", "--bbq", str(bbq), "--annotator", "ann", "--not-taken",
                       "bbq:SES:9", "--out", str(tmp_path / "none"))
    assert code == 1 and "not taken: bbq:SES:9 is not among the BBQ templates read" in err
