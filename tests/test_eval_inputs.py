"""Inputs of the evaluation (and the other commands' input files) that used to be silent, block or mislead:
each is now one `error:` line naming the file (issue 32's round of faults).

- a named pipe (FIFO) given as any input file blocked the command until someone wrote to it;
- a folder as `--survey-results` asked for a questions.csv; header-only survey results kept 0 of 6 templates
  and exited 0; an empty `import-lm-eval` file wrote empty answer files;
- `--model` over a file holding two models' rows merged them into one run;
- `--out` naming a file said the folder should have "free space and may be written";
- `publish --dry-run` promised uploads to names the Hub refuses;
- a release edited after its build was scored as if it were the release (0.7857 became 0.8214).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES
from core.profile import load_profile
from fuzzing import Outcome, run_in_process
from tasks.evaluation.answer_cache import prompt_sha256
from tasks.release.hub import check_repo_id
from tasks.survey.inputs import load_survey_results

SURVEY = Path(__file__).resolve().parent.parent / "survey" / "ko" / "example"


@contextlib.contextmanager
def at_most(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a read of a FIFO with no writer never returns by itself."""
    def expire(*_):
        raise TimeoutError(f"still blocked after {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_error(outcome: Outcome, *fragments: str) -> str:
    """Exit 1 with one `error:` line and nothing else on stderr, no traceback."""
    assert outcome.code == 1, outcome
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in outcome.err, outcome.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def prepared(previous_prepared: Path) -> Path:
    return previous_prepared


def test_a_named_pipe_as_any_input_is_refused_without_waiting(previous_release: Path, prepared: Path,
                                                              tmp_path: Path) -> None:
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    commands = {
        "validate": ["validate", str(fifo)],
        "score": ["eval", "score", "--release", str(previous_release), str(fifo.with_suffix(".csv")),
                  "--out", str(tmp_path / "s")],
        "prompt table": ["eval", "prepare", "--release", str(previous_release), "--prompt-table", str(fifo),
                         "--out", str(tmp_path / "p")],
        "replay": ["eval", "run", "--prepared", str(prepared), "--replay", str(fifo), "--model", "m",
                   "--out", str(tmp_path / "r")],
        "lm-eval samples": ["eval", "import-lm-eval", str(fifo), "--model", "m", "--out", str(tmp_path / "i")],
        "compare": ["eval", "compare", str(fifo.with_suffix(".tsv"))],
        "survey results": ["survey", "ingest", "--templates", str(EXAMPLE_TEMPLATES), "--out", str(tmp_path / "v"),
                           "--results", str(fifo.with_suffix(".csv")), "--quiet"],
        "annotations": ["labels", "import", str(fifo.with_suffix(".xlsx"))],
    }
    for suffix in (".csv", ".tsv", ".xlsx"):
        os.mkfifo(fifo.with_suffix(suffix))
    for what, argv in commands.items():
        with at_most(20):
            outcome = run_in_process(argv, tmp_path)
        assert "named pipe (FIFO)" in one_error(outcome), (what, outcome.err)


def test_a_folder_as_survey_results_is_named_as_a_folder_and_empty_results_are_refused(tmp_path: Path) -> None:
    profile = load_profile("ko")
    with pytest.raises(UserError) as folder:
        load_survey_results(SURVEY, profile)
    assert folder.value.render() == f"{SURVEY}: is a folder; expected a survey results file"  # not "needs questions.csv"
    header_only = tmp_path / "responses.csv"
    header_only.write_text((SURVEY / "responses.csv").read_text(encoding="utf-8").splitlines()[0] + "\n",
                           encoding="utf-8")
    shutil.copy(SURVEY / "questions.csv", tmp_path / "questions.csv")
    empty_json = tmp_path / "results.json"
    empty_json.write_text("[]\n", encoding="utf-8")
    for path in (header_only, empty_json):
        with pytest.raises(UserError, match="holds no survey results"):
            load_survey_results(path, profile)


def test_an_empty_lm_eval_samples_file_is_refused(tmp_path: Path) -> None:
    for text in ("", "\n\n"):
        (tmp_path / "samples.jsonl").write_text(text, encoding="utf-8")
        one_error(run_in_process(["eval", "import-lm-eval", "samples.jsonl", "--model", "m", "--out", "runs"],
                                 tmp_path), "samples.jsonl: holds no lm-eval samples")
        assert not (tmp_path / "runs").exists()
    (tmp_path / "samples.jsonl").write_text("[1, 2]\n", encoding="utf-8")  # JSON of the wrong shape
    one_error(run_in_process(["eval", "import-lm-eval", "samples.jsonl", "--model", "m", "--out", "runs"], tmp_path),
              "samples.jsonl, row 1: not an lm-eval sample")


def test_model_names_are_printable_and_long_ones_make_short_folders(prepared: Path, tmp_path: Path) -> None:
    from tasks.evaluation.runs import model_slug

    for name in ("a\nb", "\x1b[31mred", " "):
        one_error(run_in_process(["eval", "import-lm-eval", "x.jsonl", "--model", name, "--out", "runs"], tmp_path),
                  "is empty or holds control characters")
    long = "org/" + "m" * 300
    assert len(model_slug(long)) == 120 and model_slug(long) != model_slug(long + "2")
    assert model_slug("org/Model:7b") == "org-Model-7b"


def test_model_option_over_a_file_of_two_models_is_refused(previous_release: Path, tmp_path: Path) -> None:
    samples = [line.split("\t", 1)[0] for line in
               (previous_release / "KoBBQ_test_samples.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    with (tmp_path / "answers.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sample_id", "prediction", "model"])
        for number, sample in enumerate(samples):
            for k in range(3):
                writer.writerow([f"{sample}-{k}", "A", "model-a" if number % 2 else "model-b"])
    argv = ["eval", "score", "--release", str(previous_release), "answers.csv", "--out", "scores", "--no-figures",
            "--bootstrap", "0", "--prompt", "1"]
    one_error(run_in_process([*argv, "--model", "mine"], tmp_path),
              "answers.csv, row 5, column model: the rows name 2 models ('model-b', 'model-a') and --model 'mine' "
              "would merge their answers into one run")
    assert not (tmp_path / "scores").exists()


def test_out_naming_a_file_is_told_as_such(previous_release: Path, prepared: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("mine\n", encoding="utf-8")
    for argv in (["eval", "prepare", "--release", str(previous_release), "--out", "taken"],
                 ["eval", "score", "--release", str(previous_release), "x.csv", "--out", "taken"],
                 ["eval", "run", "--prepared", str(prepared), "--replay", "x.jsonl", "--model", "m", "--out", "taken"],
                 ["eval", "compare", "x.tsv", "--out", "taken"]):
        line = one_error(run_in_process(argv, tmp_path), "taken: is a file, not a folder; give a folder as --out")
        assert "free space" not in line
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("name", ["../x", "a/-b-", "o/" + "n" * 200, "ü/ä", "a/b\nc", "a--b/c", "a/b.git", "x",
                                  "a/b/c", ""])
def test_publish_refuses_names_the_hub_refuses(name: str, previous_release: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not a Hub repository name"):
        check_repo_id(name)
    one_error(run_in_process(["publish", "--release", str(previous_release), "--to-hub", name, "--dry-run"],
                             tmp_path), "is not a Hub repository name")


def test_publish_accepts_the_names_the_hub_accepts() -> None:
    for name in ("someone/kobbq-example", "Org_1/KoBBQ.v2", "a/" + "b" * 96):
        assert check_repo_id(name) == name


def test_a_release_edited_after_its_build_is_refused_or_scored_with_a_warning(previous_release: Path,
                                                                             tmp_path: Path) -> None:
    """The issue's edit: one ambiguous answer set to the biased one."""
    edited = tmp_path / "KoBBQ"
    shutil.copytree(previous_release, edited)
    path = edited / "KoBBQ_test_samples.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    header = rows[0]
    row = next(r for r in rows[1:] if "-amb-" in r[header.index("sample_id")])
    row[header.index("answer")] = row[header.index("biased_answer")]
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter="\t", lineterminator="\n").writerows(rows)
    one_error(run_in_process(["eval", "prepare", "--release", str(edited), "--out", "prepared"], tmp_path),
              "1 file(s) (KoBBQ_test_samples.tsv) differ from what the build wrote", "--allow-modified")
    assert not (tmp_path / "prepared").exists()
    allowed = run_in_process(["eval", "prepare", "--release", str(edited), "--out", "prepared", "--prompt-ids", "1",
                              "--allow-modified"], tmp_path)
    assert allowed.code == 0 and allowed.out.startswith("warning: the release ")
    requests = [json.loads(line) for line in (tmp_path / "prepared" / "requests.jsonl").read_text().splitlines()]
    with (tmp_path / "answers.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sample_id", "prediction"])
        writer.writerows([r["id"], r["answer"]] for r in requests)
    argv = ["eval", "score", "--release", str(edited), "--prepared", "prepared", "answers.csv", "--out", "scores",
            "--bootstrap", "0", "--model", "m"]
    one_error(run_in_process(argv, tmp_path), "differ from what the build wrote")
    scored = run_in_process([*argv, "--allow-modified"], tmp_path)
    assert scored.code == 0 and scored.out.startswith("warning: the release ")
    assert "- **warning: the release " in (tmp_path / "scores" / "results.md").read_text(encoding="utf-8")
    page = (tmp_path / "scores" / "results.html").read_text(encoding="utf-8")
    assert "<li><strong>warning: the release " in page and "**" not in page and "`" not in page  # Markdown rendered


def test_a_signal_says_what_the_running_command_leaves(previous_release: Path, prepared: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: SIGINT of `eval run`, `validate` or `eval prepare` said "nothing was published". The line a signal
    would print is taken while each command works (its step replaced by one that reads it)."""
    from core import interrupt
    from kobbq.commands import eval as eval_command, validate
    from tasks.evaluation import prompts

    said: list[str] = []

    def signal_now(*_args, **_kwargs):
        said.append(interrupt.stop_message("SIGINT", []))
        raise UserError("stopped by the test")

    monkeypatch.setattr(validate, "findings_for", signal_now)
    monkeypatch.setattr(prompts, "prepare_release", signal_now)  # imported by the command when it runs
    monkeypatch.setattr(eval_command, "direct_run", signal_now)
    recorded = json.loads((prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines()[0])
    (tmp_path / "x.jsonl").write_text(json.dumps({"id": recorded["id"], "prompt_id": recorded["prompt_id"], "raw": "A",
                                                  "prompt_sha256": prompt_sha256(recorded["prompt"]), "status": "ok"}))
    for argv in (["validate", str(EXAMPLE_TEMPLATES)],
                 ["eval", "prepare", "--release", str(previous_release), "--out", "prepared"],
                 ["eval", "run", "--prepared", str(prepared), "--replay", "x.jsonl", "--model", "m", "--out", "runs",
                  "--quiet"]):
        assert run_in_process(argv, tmp_path).code == 1
    assert said == ["interrupted (SIGINT): stopped; validate writes no file; nothing is left running",
                    "interrupted (SIGINT): stopped; prepared is as it was before (a preparation is moved in only once "
                    "complete); nothing is left running",
                    "interrupted (SIGINT): stopped; every answer received is kept in runs/answer_cache.sqlite: run the "
                    "same command again to resume; nothing is left running"]
    assert interrupt.stop_message("SIGINT", []).endswith("nothing was published and nothing is left running")


def test_a_signal_to_a_shared_out_evaluation_says_its_units_keep_running_and_nothing_else(
        prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "the unit runs already started keep running on the workers ...; nothing is left running"."""
    from core import interrupt
    from kobbq.commands import eval as eval_command

    said: list[str] = []

    def signal_now(*_args, **_kwargs):
        said.append(interrupt.stop_message("SIGTERM", []))
        raise UserError("stopped by the test")

    monkeypatch.setattr(eval_command, "pool_command", signal_now)
    argv = ["eval", "run", "--prepared", str(prepared), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
            "--deployment", "kobbq-model-run/shared", "--out", "runs", "--quiet"]
    assert run_in_process(argv, tmp_path).code == 1
    assert said == ["interrupted (SIGTERM): stopped; every answer received is kept in runs/answer_cache.sqlite; the "
                    "unit runs already started keep running on the workers: run the same command again to wait for "
                    "them and start the rest"]


def test_publish_names_a_lost_card_as_a_changed_file_and_checks_the_name_before_the_token(
        previous_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a release that lost README.md "was built by an older version"; with a token, an invalid name was an
    HFValidationError traceback."""
    copy = tmp_path / "KoBBQ"
    shutil.copytree(previous_release, copy)
    (copy / "README.md").unlink()
    line = one_error(run_in_process(["publish", "--release", str(copy), "--to-hub", "someone/x", "--dry-run"],
                                    tmp_path), "1 file(s) differ from what the build wrote (README.md)")
    assert "older version" not in line
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    one_error(run_in_process(["publish", "--release", str(previous_release), "--to-hub", "someone/../x"], tmp_path),
              "'someone/../x' is not a Hub repository name")
