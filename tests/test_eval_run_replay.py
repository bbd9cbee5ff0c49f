"""The embedded default: ``kobbq eval run --replay`` of the answers shipped with the example (no network, no key).

A recording answers the questions it was recorded for, matched by the sha256 of the prompt text: before, it
matched by (prompt, request ID), and following the README in order (the real release prepared into the same
folder) the example's 360 recorded answers were counted "ok" for other questions of the real release, with a
message saying to run again, which cannot help a replay.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kobbq.cli import main
from core.errors import UserError
from tasks.evaluation.answer_cache import GenerationSettings
from tasks.evaluation.answer_cache import prompt_sha256
from tasks.evaluation.client import ReplayModel
from tasks.evaluation.prompts import prepare_release
from test_eval_run import read_jsonl

RECORDING = Path(__file__).resolve().parent.parent / "templates_raw" / "example" / "evaluation" / "recorded_answers.jsonl"
FALLBACK_PROMPTS = RECORDING.parent.parent / "evaluation_prompts.tsv"


def test_every_request_of_the_example_is_recorded(example_release: Path, tmp_path: Path) -> None:
    """Both prompt tables a machine may prepare the example with: the example's own (a fresh clone's) and, when the
    released data is beside the project, the profile's."""
    prepare_release(example_release, tmp_path / "fallback", split="all", prompts=FALLBACK_PROMPTS)
    wanted = {prompt_sha256(r["prompt"]) for r in read_jsonl(tmp_path / "fallback" / "requests.jsonl")}
    assert len(wanted) == 112 * 3 * 2
    prepare_release(example_release, tmp_path / "profile", split="all")  # the profile's table, or its fallback
    wanted |= {prompt_sha256(r["prompt"]) for r in read_jsonl(tmp_path / "profile" / "requests.jsonl")}
    recorded = [r["prompt_sha256"] for r in read_jsonl(RECORDING)]
    assert len(recorded) == len(set(recorded)) and wanted <= set(recorded)


def test_replay_runs_without_key_or_network(example_release: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    prepared = tmp_path / "prepared"
    prepare_release(example_release, prepared)  # the test split, as the README's command prepares it
    assert main(["eval", "run", "--prepared", str(prepared), "--replay", str(RECORDING), "--model", "example-model",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    rows = read_jsonl(tmp_path / "out" / "example-model" / "answers.jsonl")
    recorded = {r["prompt_sha256"]: r["raw"] for r in read_jsonl(RECORDING)}
    requests = {(r["prompt_id"], r["id"]): r["prompt"] for r in read_jsonl(prepared / "requests.jsonl")}
    assert len(rows) == len(requests) == 24 * 3 * len({p for p, _ in requests})
    assert all(r["status"] == "ok" and r["raw"] == recorded[prompt_sha256(requests[(r["prompt_id"], r["id"])])]
               for r in rows)
    assert rows[0]["model"] == "example-model"
    again = tmp_path / "again"  # an answers.jsonl is a recording too
    assert main(["eval", "run", "--prepared", str(prepared), "--replay", str(tmp_path / "out" / "example-model" /
                 "answers.jsonl"), "--model", "example-model", "--out", str(again), "--quiet"]) == 0
    assert (again / "example-model" / "answers.jsonl").read_bytes() == \
        (tmp_path / "out" / "example-model" / "answers.jsonl").read_bytes()


def test_a_recording_of_other_questions_answers_none_of_them_and_says_so(tmp_path: Path, capsys) -> None:
    """The same request IDs with other prompt texts (another release, split or prompt table)."""
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    requests = [{"id": f"age-001a-001-amb-bsd-{k}", "sample_id": "age-001a-001-amb-bsd", "prompt_id": 1,
                 "prompt": f"another question {k}", "choices": {"A": "x", "B": "y", "C": "z"}, "answer": "A"}
                for k in range(3)]
    (prepared / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    recording = tmp_path / "recorded.jsonl"
    recording.write_text("".join(json.dumps({"id": r["id"], "prompt_id": 1, "prompt_sha256": prompt_sha256(f"q{k}"),
                                             "raw": "(A)", "status": "ok"}) + "\n"
                                 for k, r in enumerate(requests[:2])), encoding="utf-8")
    assert main(["eval", "run", "--prepared", str(prepared), "--replay", str(recording), "--model", "m",
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: the recording {recording} answers none of the 3 requests of this prepared folder; 2 of their ids are "
        "in it, recorded for other questions (another release, split or prompt table); nothing was written: a replay "
        "answers only the questions it was recorded for: replay it against the prepared folder it was recorded "
        "from, or get the answers from a live endpoint (--endpoint)"]
    assert not (tmp_path / "out").exists()  # refused before anything is written
    recording.write_text(line(requests[0]["id"], requests[0]["prompt"]), encoding="utf-8")  # one of the three
    assert main(["eval", "run", "--prepared", str(prepared), "--replay", str(recording), "--model", "m",
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"the recording {recording} answers 1 of 3 requests; the other 2 will be failed rows"
    assert err[-1] == (f"error: 2 of 3 request(s) have no answer in the recording {recording}: get them from a live "
                       "endpoint (--endpoint)")


def line(request_id: str, prompt: str, raw: str = "(A)", status: str = "ok", prompt_id: int = 1) -> str:
    return json.dumps({"id": request_id, "prompt_id": prompt_id, "prompt_sha256": prompt_sha256(prompt), "raw": raw,
                       "status": status}) + "\n"


def test_unrecorded_request_fails_and_bad_recording_names_the_line(tmp_path: Path) -> None:
    recording = tmp_path / "recorded.jsonl"
    recording.write_text(line("a-0", "the question"), encoding="utf-8")
    model = ReplayModel(GenerationSettings("replay", "m"), recording)
    assert model.ask("a-0", 1, "the question").raw == "(A)"
    assert model.ask("other-id", 7, "the question").raw == "(A)"  # the same question under another id
    assert model.ask("a-0", 1, "another question").status == "failed"
    cases = {
        line("a-0", "q") + line("a-1", "q2", raw="", status="failed"):
            "row 2, column status: status must be one of ok, empty, malformed",
        '{"id": "a-0", "prompt_id": 1, "raw": "(A)", "status": "ok"}\n':  # recorded before answers were hashed
            "row 1: not a recorded answer (an object with id, prompt_id, prompt_sha256, raw, status)",
        line("a-0", "q") + line("a-1", "q", raw="(B)"):
            "row 2, column raw: a second, different answer to the same prompt (first at row 1): which one the model "
            "gave cannot be told",
        line("a-0", "q") + line("a-0", "q", raw="(C)"):  # two answers for one request
            "row 2, column raw: a second, different answer to the same prompt (first at row 1): which one the model "
            "gave cannot be told",
        '{"id": "a-0", "prompt_id": 1, "prompt_sha256": "abc", "raw": "(A)", "status": "ok"}\n':
            "row 1, column prompt_sha256: prompt_sha256 must be the sha256 of the prompt text, 64 hexadecimal digits",
        "[1, 2]\n": "row 1: not a recorded answer (an object with id, prompt_id, prompt_sha256, raw, status)",
    }
    for text, message in cases.items():
        recording.write_text(text, encoding="utf-8")
        with pytest.raises(UserError) as error:
            ReplayModel(GenerationSettings("replay", "m"), recording)
        assert error.value.render() == f"{recording}, {message}"
    recording.write_text(line("a-0", "q") + line("a-0", "q") + line("a-0", "q from another prompt table", "(B)"),
                         encoding="utf-8")  # the same line twice is harmless; one id, two questions, two answers
    model = ReplayModel(GenerationSettings("replay", "m"), recording)
    assert model.ask("a-0", 1, "q").raw == "(A)" and model.ask("a-0", 1, "q from another prompt table").raw == "(B)"
