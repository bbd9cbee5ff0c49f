"""The fake model server's request log (``serve --log FILE``) and its count (``count FILE``): the dry run's
check that nothing was asked, or paid, twice. Requests go through the real ``openai`` client."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import openai
import pytest

import fake_openai
from fake_openai import FAKE_KEY, FakeOpenAIServer, RequestLog, count_log, prompt_hash


def test_the_log_counts_what_was_asked_and_answered_and_names_what_was_paid_twice(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    server = FakeOpenAIServer().start()
    server.state.log = RequestLog(log)
    client = openai.OpenAI(base_url=server.url, api_key=FAKE_KEY, max_retries=0)
    try:
        for prompt in ("맥락: 하나", "맥락: 둘", "맥락: 하나"):
            client.chat.completions.create(model="model-a", messages=[{"role": "user", "content": prompt}])
        client.completions.create(model="model-b", prompt=["맥락: 셋", "맥락: 넷"])
        server.state.fail(500, times=1)  # received, never answered
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="model-a", messages=[{"role": "user", "content": "맥락: 다섯"}])
    finally:
        server.stop()
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert {line["event"] for line in lines} == {"received", "answered"}
    assert all("맥락" not in json.dumps(line, ensure_ascii=False) for line in lines)  # hashes, not the texts
    counts = count_log(log)
    assert sum(counts.received.values()) == 6 and sum(counts.answered.values()) == 5
    assert counts.answered_twice == {("model-a", prompt_hash("맥락: 하나")): 2}
    assert counts.answered == server.state.answered.__class__(
        {(m, prompt_hash(p)): n for (m, p), n in server.state.answered.items()})
    report = counts.render()
    assert "6 requests received, 5 answered" in report
    assert f"model-a prompt {prompt_hash('맥락: 하나')}: answered 2 times" in report


def test_count_exits_1_when_a_prompt_was_answered_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    log = tmp_path / "requests.jsonl"
    once = RequestLog(log)
    once.write("received", "m", ["a", "b"])
    once.write("answered", "m", ["a", "b"])
    once.close()
    log.write_text(log.read_text() + '{"time": 1, "event": "answ', encoding="utf-8")  # cut short by a kill
    monkeypatch.setattr(sys, "argv", ["fake_openai.py", "count", str(log)])
    fake_openai.main()
    assert "no prompt was answered twice" in capsys.readouterr().out
    again = RequestLog(log)  # the server started again on the same log: its lines start on their own
    again.write("answered", "m", ["a"])
    again.close()
    with pytest.raises(SystemExit) as stopped:
        fake_openai.main()
    assert stopped.value.code == 1 and "1 prompt(s) answered more than once" in capsys.readouterr().out
