"""`kobbq eval compare` with published results tables (5_evaluation.py's layout) beside scored runs, and the
bootstrap interval of a model scored on one prompt (tasks/evaluation/compare.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kobbq.cli import main
from tasks.evaluation.compare import PUBLISHED, results_table_runs, template_labels
from tasks.evaluation.prompts import read_table
from tasks.evaluation.metrics import UPSTREAM_HEADER

INTERVALS = ("model\tprompt\tgrouping\tgroup\ttemplates\trows\tooc_ratio\tacc_amb\tacc_dis\tdiff_bias_amb\t"
             "diff_bias_dis\tacc_amb_low\tacc_amb_high\n")


def upstream_table(path: Path, rows: list[list[object]]) -> Path:
    """As 5_evaluation.py writes it: csv.writer's defaults (\\r\\n line ends), the long header."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(UPSTREAM_HEADER)
        writer.writerows(rows)
    return path


def published(folder: Path) -> list[Path]:
    folder.mkdir()
    return [upstream_table(folder / "KoBBQ_test_1.tsv", [["gpt-4", "overall", 0.0, 0.5, 0.9, 0.2, 0.1],
                                                        ["gpt-4", "ST", 0.0, 0.4, 0.8, 0.3, 0.1],
                                                        ["gpt-4", "age", 0.0, 0.6, 1.0, 0.1, 0.0]]),
            upstream_table(folder / "KoBBQ_test_2.tsv", [["gpt-4", "overall", 0.1, 0.7, 0.7, 0.0, 0.1],
                                                        ["gpt-4", "ST", 0.0, 0.6, 0.6, 0.1, 0.3],
                                                        ["gpt-4", "age", 0.0, 0.8, 0.8, 0.1, 0.0]])]


def test_a_published_table_sits_beside_a_scored_model(tmp_path: Path, capsys) -> None:
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "results_intervals.tsv").write_text(
        INTERVALS + "gpt-4\t1\toverall\toverall\t2\t48\t0.0\t0.25\t0.5\t0.5\t0.0\t0.1\t0.4\n"
        "gpt-4\t1\tlabel\tST\t1\t24\t0.0\t0.5\t0.5\t0.5\t0.0\tnan\tnan\n"
        "gpt-4\t1\tcategory\tage\t1\t24\t0.0\t0.75\t0.5\t0.5\t0.0\t0.5\t1.0\n", encoding="utf-8")
    assert main(["eval", "compare", str(ours), *map(str, published(tmp_path / "paper")), "--metrics", "acc_amb"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "| group | Acc amb: gpt-4 | Acc amb: gpt-4 (published) |"
    # published: mean and sample std over the two prompts' tables; ours: one prompt, its bootstrap interval
    assert printed[2:] == ["| overall | 0.2500 [0.1000, 0.4000] | 0.6000 ± 0.1414 (2) |",
                           "| ST | 0.5000 | 0.5000 ± 0.1414 (2) |",
                           "| age | 0.7500 [0.5000, 1.0000] | 0.7000 ± 0.1414 (2) |"]


def test_groups_are_told_apart_by_the_shipped_profiles_labels(tmp_path: Path) -> None:
    [first, _] = published(tmp_path / "paper")
    runs = results_table_runs(read_table(first), first)
    assert runs[["model", "prompt", "grouping", "group"]].values.tolist() == [
        ["gpt-4" + PUBLISHED, "1", "overall", "overall"], ["gpt-4" + PUBLISHED, "1", "label", "ST"],
        ["gpt-4" + PUBLISHED, "1", "category", "age"]]
    assert {"ST", "TM", "NC"} <= template_labels()


def test_a_score_results_tsv_keeps_its_prompt_and_model(tmp_path: Path) -> None:
    path = tmp_path / "results.tsv"
    path.write_text("\t".join(UPSTREAM_HEADER) + "\tprompt\nm\toverall\t0.0\t0.5\t0.5\t0.0\t0.0\trelease\n",
                    encoding="utf-8")
    runs = results_table_runs(read_table(path), path)
    assert runs[["model", "prompt", "grouping"]].values.tolist() == [["m", "release", "overall"]]


def test_a_table_named_otherwise_is_one_prompt_named_by_its_file(tmp_path: Path, capsys) -> None:
    path = upstream_table(tmp_path / "gpt4_table.tsv", [["gpt-4", "overall", 0.0, 0.5, 0.9, 0.2, "nan"]])
    runs = results_table_runs(read_table(path), path)
    assert runs["prompt"].tolist() == ["gpt4_table"]
    assert main(["eval", "compare", str(path), "--metrics", "diff_bias_dis"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "| overall | — |"


@pytest.mark.parametrize("rows, message", [([], "holds no results"), ([["", "overall", 0, 0, 0, 0, 0]],
                                                                       "row 2, column model: a row without a model")])
def test_a_broken_table_is_refused(tmp_path: Path, capsys, rows, message) -> None:
    assert main(["eval", "compare", str(upstream_table(tmp_path / "t.tsv", rows))]) == 1
    assert message in capsys.readouterr().err


def test_esbbq_metrics_compare_too(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "es"
    folder.mkdir()
    header = INTERVALS.rstrip("\n").replace("\tacc_amb_low\tacc_amb_high", "") + "\tacc_ambig\tbias_score_ambig\n"
    (folder / "results_intervals.tsv").write_text(
        header + "m\t1\toverall\toverall\t2\t48\t0.0\t0.25\t0.5\t0.5\t0.0\t0.4\t0.1\n"
        "m\t2\toverall\toverall\t2\t48\t0.0\t0.25\t0.5\t0.5\t0.0\t0.6\t0.3\n", encoding="utf-8")
    assert main(["eval", "compare", str(folder), "--metrics", "acc_ambig", "bias_score_ambig"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "| overall | 0.5000 ± 0.1414 (2) | 0.2000 ± 0.1414 (2) |"
