"""Fuzzing the evaluation's inputs with the kinds of input issue 32 found commands silent or tracebacking on:
well-formed JSON of the wrong shape (a list, a number, an object without the keys) in every JSON input of
`kobbq eval` (prepared.json, requests.jsonl, a replay recording, lm-eval samples, JSONL predictions), empty but
valid inputs (no bytes, blank lines, a header alone, `[]`, `{}`), and names with control characters or at the
limits of their length (`--model`, the `--out` folder, Hub repository names). Full disks are in
tests/test_eval_faults.py (a tmpfs needs a mount namespace of its own).

Besides tests/fuzzing.py's promises (exit 0 or 1, no traceback, nothing written outside the output, the
previous release untouched), a failure must be one `error:` line and nothing else.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import strategies as st

from fuzzing import CELL, FUZZ_PROFILES, JSON_VALUE, Outcome, check_command, fuzz, workspace, write
from tasks.evaluation.answer_cache import prompt_sha256

# Valid JSON that is not what the file holds: any value but an object, or an object without the expected keys.
WRONG_SHAPE = st.one_of(JSON_VALUE.filter(lambda value: not isinstance(value, dict)),
                        st.dictionaries(CELL, JSON_VALUE, max_size=3),
                        st.sampled_from([[1, 2], [], {}, None, "", 0, [{"id": "x"}], {"data": []}]))
EMPTY_FORMS = [b"", b"\n", b"\n\n\n", b"\xef\xbb\xbf", b" \n\t\n", b"[]\n", b"{}\n", b"null\n"]


def assert_one_error(outcome: Outcome, shown: str = "") -> None:
    """A failure is one `error:` line and nothing else on stderr."""
    if outcome.code == 1:
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{shown}\n{outcome.err[-3000:]}"


@pytest.fixture()
def prepared(previous_prepared: Path) -> Path:
    return previous_prepared


def requests(prepared: Path) -> list[dict]:
    return [json.loads(line) for line in (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines()]


def lines_of(values: list[object]) -> bytes:
    return "".join(json.dumps(value, ensure_ascii=False) + "\n" for value in values).encode("utf-8")


def with_one_line(valid: bytes, value: object, where: float) -> bytes:
    """The valid JSON Lines file with one line replaced by ``value`` (``where``: which, as a fraction)."""
    lines = valid.decode("utf-8").splitlines()
    lines[min(int(where * len(lines)), len(lines) - 1)] = json.dumps(value, ensure_ascii=False, allow_nan=True)
    return ("\n".join(lines) + "\n").encode("utf-8")


def evaluation_inputs(prepared: Path) -> dict[str, bytes]:
    """Each JSON input of the evaluation, valid, as the command reading it expects it."""
    asked = requests(prepared)
    recording = lines_of([{"id": r["id"], "prompt_id": 1, "prompt_sha256": prompt_sha256(r["prompt"]),
                           "raw": "답: (A)", "status": "ok"} for r in asked])
    samples = lines_of([{"doc_id": n, "doc": r, "resps": [["(A)"]]} for n, r in enumerate(asked)])
    answers = lines_of([{"id": r["id"], "prompt_id": 1, "raw": "(A)", "status": "ok"} for r in asked])
    return {"prepared.json": (prepared / "prepared.json").read_bytes(),
            "requests.jsonl": (prepared / "requests.jsonl").read_bytes(),
            "recorded.jsonl": recording, "samples.jsonl": samples, "answers.jsonl": answers}


def run_target(name: str, data: bytes, prepared: Path, release: Path) -> None:
    """Hand ``data`` as the input ``name`` to the command that reads it, in a fresh workspace."""
    with workspace(release) as root:
        shutil.copytree(prepared, root / "prepared")
        inputs = evaluation_inputs(prepared)
        for other, valid in inputs.items():
            if other not in ("prepared.json", "requests.jsonl"):
                write(root / other, valid)
        target = root / "prepared" / name if name in ("prepared.json", "requests.jsonl") else root / name
        write(target, data)
        if name in ("requests.jsonl", "recorded.jsonl"):
            argv, outputs = ["eval", "run", "--prepared", "prepared", "--replay", "recorded.jsonl", "--model", "m",
                             "--out", "runs", "--quiet"], ["runs"]
        elif name == "samples.jsonl":
            argv, outputs = ["eval", "import-lm-eval", "samples.jsonl", "--model", "m", "--out", "runs"], ["runs"]
        else:  # prepared.json, answers.jsonl
            argv, outputs = ["eval", "score", "--release", "build/KoBBQ", "--prepared", "prepared", "answers.jsonl",
                             "--model", "m", "--out", "scored", "--no-figures", "--bootstrap", "0"], ["scored"]
        outcome = check_command(argv, root, outputs=outputs, release="build/KoBBQ", what=f"{name}: {data[:300]!r}")
        assert_one_error(outcome, f"{name}: {data[:300]!r}")


TARGETS = ["prepared.json", "requests.jsonl", "recorded.jsonl", "samples.jsonl", "answers.jsonl"]


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_json_of_the_wrong_shape(profile, prepared, previous_release):
    inputs = evaluation_inputs(prepared)

    def damaged(case: tuple[str, object, float]) -> None:
        name, value, where = case
        data = (json.dumps(value, allow_nan=True).encode("utf-8") if name == "prepared.json"
                else with_one_line(inputs[name], value, where))
        run_target(name, data, prepared, previous_release)

    fuzz(profile, st.tuples(st.sampled_from(TARGETS), WRONG_SHAPE, st.floats(0, 1)), damaged, fast=8, long=150)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_empty_but_valid_inputs(profile, prepared, previous_release):
    """Every empty form of every JSON input: a few pairs by default, all of them in the slow step."""
    fuzz(profile, st.tuples(st.sampled_from(TARGETS), st.sampled_from(EMPTY_FORMS)),
         lambda case: run_target(*case, prepared, previous_release), fast=8, long=len(TARGETS) * len(EMPTY_FORMS) * 2)


def test_empty_tables_are_refused_in_one_line(previous_release, tmp_path):
    """A header alone (or nothing) as predictions, a prompt table or a results table to compare."""
    header_only = {"predictions.csv": b"sample_id,prediction\n", "predictions.tsv": b"sample_id\tprediction\n",
                   "empty.csv": b"", "prompts.tsv": b"prompt_id\tinstruction\tcontext\tquestion\ta\tb\tc\tanswer\t"
                                                    b"unknown\n", "results.tsv": b"model\tcategory\n"}
    for name, data in header_only.items():
        with workspace(previous_release) as root:
            write(root / name, data)
            if name == "prompts.tsv":
                argv, outputs = ["eval", "prepare", "--release", "build/KoBBQ", "--prompt-table", name, "--out",
                                 "prepared"], ["prepared"]
            elif name == "results.tsv":
                argv, outputs = ["eval", "compare", name, "--out", "compared"], ["compared"]
            else:
                argv, outputs = ["eval", "score", "--release", "build/KoBBQ", name, "--prompt", "1", "--out", "scored",
                                 "--no-figures", "--bootstrap", "0"], ["scored"]
            outcome = check_command(argv, root, outputs=outputs, release="build/KoBBQ")
            assert outcome.code == 1, (name, outcome)
            assert_one_error(outcome, name)


NAME = st.one_of(st.text(min_size=0, max_size=300),
                 st.text(st.characters(codec="ascii"), min_size=240, max_size=300),
                 st.sampled_from(["a\nb", "\x00", "\x1b[2J", "m\r", "m" * 255, "m" * 256, "../m", "/", ".", " ",
                                  "org/model", "\u202eevil", "모델", "a\tb"]))


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_names_with_control_characters_and_maximal_lengths(profile, prepared, previous_release):
    inputs = evaluation_inputs(prepared)

    def named(case: tuple[str, str]) -> None:
        kind, name = case
        with workspace(previous_release) as root:
            shutil.copytree(prepared, root / "prepared")
            write(root / "recorded.jsonl", inputs["recorded.jsonl"])
            write(root / "answers.jsonl", inputs["answers.jsonl"])
            if kind == "model":
                argv = ["eval", "run", "--prepared", "prepared", "--replay", "recorded.jsonl", "--model", name,
                        "--out", "runs", "--quiet"]
                outputs = ["runs"]
            elif kind == "score-model":
                argv = ["eval", "score", "--release", "build/KoBBQ", "--prepared", "prepared", "answers.jsonl",
                        "--model", name, "--out", "scored", "--no-figures", "--bootstrap", "0"]
                outputs = ["scored"]
            elif kind == "out":
                folder = name.replace("/", "_").replace("\x00", "_") or "_"
                argv = ["eval", "prepare", "--release", "build/KoBBQ", "--prompt-ids", "1", "--out", f"o/{folder}"]
                outputs = ["o"]
            else:
                argv = ["publish", "--release", "build/KoBBQ", "--to-hub", f"someone/{name}", "--dry-run"]
                outputs = []
            if "\x00" in name and kind != "out":
                return  # a NUL cannot be passed on a command line
            outcome = check_command(argv, root, outputs=outputs, release="build/KoBBQ", what=f"{kind}: {name!r}")
            assert_one_error(outcome, f"{kind}: {name!r}")

    fuzz(profile, st.tuples(st.sampled_from(["model", "score-model", "out", "hub"]), NAME), named, fast=8,
         long=150)
