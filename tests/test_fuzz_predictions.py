"""Fuzzing: malformed prediction files (a CSV sample_id,prediction, the answers.jsonl of `kobbq eval run`) given
to `kobbq eval score` against the example's release, and malformed recordings given to `kobbq eval run --replay`.
The promises are tests/fuzzing.py's."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import strategies as st

from fuzzing import FUZZ_PROFILES, check_command, fuzz, malformed_table, workspace, write
from tasks.evaluation.answer_cache import prompt_sha256


def test_samples(release: Path) -> list[dict[str, str]]:
    with (release / "KoBBQ_test_samples.tsv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


test_samples.__test__ = False  # a helper, not a test


def prediction_csv(release: Path) -> bytes:
    """Every test sample answered with its right choice."""
    lines = ["sample_id,prediction"] + [f"{row['sample_id']},{row['answer']}" for row in test_samples(release)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def answers_jsonl(release: Path) -> bytes:
    """`kobbq eval run`'s answers: each sample in its three choice orders, the model's text as it came."""
    lines = [json.dumps({"id": f"{row['sample_id']}-{order}", "prompt_id": 1, "raw": f"답: ({'ABC'[order]})",
                         "status": "ok"}, ensure_ascii=False)
             for row in test_samples(release) for order in range(3)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def malformed_predictions(release: Path) -> st.SearchStrategy[tuple[str, bytes]]:
    return st.one_of(malformed_table(prediction_csv(release), ",").map(lambda data: ("predictions.csv", data)),
                     malformed_table(answers_jsonl(release), ",").map(
                         lambda data: ("answers.jsonl", data)))


def check_predictions(case: tuple[str, bytes], release: Path, profile: str) -> None:
    name, data = case
    options = ["--no-figures", "--bootstrap", "0"] if profile == "fast" else ["--bootstrap", "5"]
    with workspace(release) as root:
        write(root / "run" / name, data)
        check_command(["eval", "score", "--release", "build/KoBBQ", f"run/{name}", "--prompt", "1", "--model", "m",
                       "--out", "scored", *options], root, outputs=["scored"], release="build/KoBBQ")


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_predictions(profile, previous_release):
    fuzz(profile, malformed_predictions(previous_release),
         lambda case: check_predictions(case, previous_release, profile), fast=6, long=100)


# --- a recording replayed by `kobbq eval run --replay` -----------------------------------------------------

@pytest.fixture()
def prepared(previous_prepared: Path) -> Path:
    return previous_prepared


def recording(prepared: Path) -> bytes:
    """Every prepared request answered, as `--replay` reads a recording."""
    lines = [json.dumps({"id": request["id"], "prompt_id": request["prompt_id"],
                         "prompt_sha256": prompt_sha256(request["prompt"]), "raw": "답: (A)", "status": "ok"},
                        ensure_ascii=False)
             for request in map(json.loads, (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines())]
    return ("\n".join(lines) + "\n").encode("utf-8")


def check_replay(data: bytes, prepared: Path, release: Path) -> None:
    with workspace(release) as root:
        shutil.copytree(prepared, root / "prepared")
        write(root / "recorded.jsonl", data)
        check_command(["eval", "run", "--prepared", "prepared", "--replay", "recorded.jsonl", "--model", "m",
                       "--out", "runs", "--quiet"], root, outputs=["runs"], release="build/KoBBQ")


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_replay_recording(profile, prepared, previous_release):
    fuzz(profile, malformed_table(recording(prepared), ","),
         lambda data: check_replay(data, prepared, previous_release), fast=5, long=100)
