"""JSON Lines inputs that are not UTF-8 or not JSON: one error naming file, line and column (issue 25, point 3).

Before: ``kobbq eval run --replay FILE`` with a Latin-1 byte printed a traceback ending in
``UnicodeDecodeError: ... position 101``; so did a predictions file for ``eval score`` and a
hand-edited ``requests.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import UserError
from kobbq.cli import main
from tasks.evaluation.answer_cache import prompt_sha256
from core.text_files import json_records, text_lines
from tasks.evaluation.predictions import read_predictions
from tasks.evaluation.runs import load_requests

REQUEST = {"id": "s-0", "sample_id": "s", "prompt_id": 1, "prompt": "맥락: ...", "choices": {"A": "a", "B": "b"},
           "answer": "A"}
RECORDED = json.dumps({"id": "s-0", "prompt_id": 1, "prompt_sha256": prompt_sha256(REQUEST["prompt"]), "raw": "(A)",
                       "status": "ok"}) + "\n"


def test_a_byte_that_is_not_utf8_is_named_by_line_and_character_column(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_bytes(RECORDED.encode() + '{"raw": "정답은 '.encode() + b"caf\xe9\"}\n")
    with pytest.raises(UserError) as error:
        list(text_lines(path))
    # {"raw": "정답은 caf is 16 characters (the Korean ones 3 bytes each): the byte is the 17th character
    assert error.value.render() == f"{path}, row 2, column 17: not UTF-8 text (byte 0xe9); save it as UTF-8"


def test_the_size_limit_counts_the_bytes_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(RECORDED * 3, encoding="utf-8")
    assert len(list(text_lines(path, limit=len(RECORDED) * 3))) == 3
    with pytest.raises(UserError, match=f"has more than {len(RECORDED) * 2 + 1:,} bytes"):
        list(text_lines(path, limit=len(RECORDED) * 2 + 1))


def test_lines_lose_their_breaks_and_a_leading_bom(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes("\ufeff{}\r\n\n[1]".encode())
    assert list(text_lines(path)) == [(1, "{}"), (2, ""), (3, "[1]")]
    assert [(where.row, record) for where, record in json_records(path)] == [(1, {}), (3, [1])]


def test_a_line_that_is_not_json_names_the_column(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(RECORDED + '{"id": "s-1", "prompt_id": 1 "raw": ""}\n', encoding="utf-8")
    with pytest.raises(UserError) as error:
        list(json_records(path))
    assert error.value.render() == f"{path}, row 2, column 30: not JSON (Expecting ',' delimiter)"


@pytest.fixture()
def prepared(tmp_path: Path) -> Path:
    folder = tmp_path / "prepared"
    folder.mkdir()
    (folder / "requests.jsonl").write_text(json.dumps(REQUEST, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder


def test_replay_that_is_not_utf8_is_one_error_line(prepared: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    recording = tmp_path / "recorded.jsonl"
    recording.write_bytes(RECORDED.encode() + b'{"id": "s-1", "prompt_id": 1, "raw": "caf\xe9", "status": "ok"}\n')
    argv = ["eval", "run", "--prepared", str(prepared), "--replay", str(recording), "--model", "m",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {recording}, row 2, column 42: not UTF-8 text (byte 0xe9); save it as UTF-8\n"
    recording.write_text(RECORDED + "[1, 2]\n", encoding="utf-8")
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith(f"error: {recording}, row 2: not a recorded answer")
    recording.unlink()
    assert main(argv) == 1
    assert capsys.readouterr().err == f"error: {recording}: file does not exist\n"


def test_requests_and_predictions_that_are_not_utf8_name_line_and_column(prepared: Path, tmp_path: Path) -> None:
    requests = prepared / "requests.jsonl"
    requests.write_bytes(requests.read_bytes() + b'{"id": "\xff"}\n')
    with pytest.raises(UserError, match=r"requests.jsonl, row 2, column 9: not UTF-8 text \(byte 0xff\)"):
        load_requests(prepared)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_bytes(b'{"sample_id": "s-0", "prediction": "caf\xe9"}\n')
    with pytest.raises(UserError, match=r"predictions.jsonl, row 1, column 40: not UTF-8 text \(byte 0xe9\)"):
        read_predictions(predictions)
