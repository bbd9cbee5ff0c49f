"""Answers that cannot be scored are said so, on the console and in results.md (issue 25, point 5).

Before: predictions all out-of-choice or all blank exited 0 printing ``acc amb nan, acc dis nan,
...`` and nothing else. They still exit 0 (the files are a faithful score of what was given),
with a warning that names the run, the counts and the metrics that could not be computed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kobbq.cli import main
from tasks.evaluation import report
from test_eval_fixtures import EXAMPLE_PROMPTS, UNKNOWN, small_release_rows, write_release
from test_eval_score import write_csv


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "rel")


def score_cli(release: Path, predictions: Path, out: Path, *options: str) -> int:
    return main(["eval", "score", "--release", str(release), "--prompt-table", str(EXAMPLE_PROMPTS), "--bootstrap", "0",
                 "--no-figures", "--out", str(out), str(predictions), *options])


def test_blank_answers_exit_0_with_a_warning_on_the_console_and_in_results(release: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ids = [r["sample_id"] for r in small_release_rows()]
    path = write_csv(tmp_path / "silent.csv", ["sample_id", "prediction"], [[i, ""] for i in ids])
    assert score_cli(release, path, tmp_path / "out") == 0
    warning = ("silent prompt release: all 16 answers are out-of-choice (16 blank): Acc amb, Acc dis, Diff-bias amb, "
               "Diff-bias dis, BBQ s_DIS, BBQ s_AMB cannot be computed (— in the tables, NaN in the TSV files); "
               "ooc.tsv lists what the model said")
    assert f"warning: {warning}\n" in capsys.readouterr().out
    results = (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    assert f"- **warning: {warning.removeprefix('silent prompt release: ')}**" in results


def test_out_of_choice_counted_as_wrong_still_warns_also_on_the_page(release: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ids = [r["sample_id"] for r in small_release_rows()]
    path = write_csv(tmp_path / "chatty.csv", ["sample_id", "prediction"], [[i, "I cannot answer."] for i in ids])
    page_notes: list[str] = []  # results.html's notes (the figures themselves take seconds to draw)
    monkeypatch.setattr(report, "figures_and_page", lambda table, notes, display: page_notes.extend(notes) or {})
    assert main(["eval", "score", "--release", str(release), "--prompts", str(EXAMPLE_PROMPTS), "--bootstrap", "0",
                 "--out", str(tmp_path / "out"), str(path), "--ooc-as-wrong"]) == 0
    warning = ("chatty prompt release: all 16 answers are out-of-choice: BBQ s_DIS cannot be computed (— in the "
               "tables, NaN in the TSV files); the other metrics count every answer as wrong (--ooc-as-wrong)")
    assert f"warning: {warning}" in capsys.readouterr().out
    assert page_notes[0].startswith(f"warning: {warning}")


def test_a_context_type_without_answers_names_its_metrics(release: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rows = [[r["sample_id"], "" if "-amb-" in r["sample_id"] else r["answer"]] for r in small_release_rows()]
    path = write_csv(tmp_path / "half.csv", ["sample_id", "prediction"], rows)
    assert score_cli(release, path, tmp_path / "out") == 0
    assert ("warning: half prompt release: 8 of 16 answers are out-of-choice (8 blank): Acc amb, Diff-bias amb, "
            "BBQ s_AMB cannot be computed") in capsys.readouterr().out


def test_answers_that_score_bring_no_warning(release: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    rows = [[r["sample_id"], UNKNOWN if "-amb-" in r["sample_id"] else r["answer"]] for r in small_release_rows()]
    path = write_csv(tmp_path / "fine.csv", ["sample_id", "prediction"], rows)
    assert score_cli(release, path, tmp_path / "out") == 0
    assert "warning" not in capsys.readouterr().out
    assert "warning" not in (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
