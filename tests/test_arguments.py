"""Impossible numbers are refused at argument parsing, in one line (issue 25, point 5).

Before: ``kobbq eval score --bootstrap -1`` was accepted and reported ("-1 bootstrap
resamples"), ``--seed -5`` ended in a numpy traceback, ``eval run --max-retries -1`` and
``--timeout -1`` in tracebacks from the HTTP client, so did ``--endpoint 'http://[::1'`` and
``--endpoint ''``; and every argparse error printed the command's whole usage (nine lines for
``eval score``) before it.
"""

from __future__ import annotations

import argparse
import contextlib
import signal

import pytest

from kobbq.arguments import http_url, real_number, whole_number
from kobbq.cli import main


def test_whole_number_has_a_floor() -> None:
    at_least_one = whole_number(1)
    assert at_least_one("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1, not 0"):
        at_least_one("0")
    with pytest.raises(argparse.ArgumentTypeError, match="expected a whole number, not '2.5'"):
        at_least_one("2.5")


def test_real_number_is_finite_and_bounded() -> None:
    seconds = real_number(0, above=True)
    assert seconds("0.5") == 0.5
    for text in ("0", "-1", "nan", "inf"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be a finite number more than 0"):
            seconds(text)
    assert real_number(0)("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="expected a number, not 'ten'"):
        seconds("ten")


def test_an_endpoint_is_an_http_url_with_a_host() -> None:
    assert http_url("https://api.example.org/v1") == "https://api.example.org/v1"
    for text in ("localhost:8000", "127.0.0.1:8000/v1", "ftp://127.0.0.1/v1", "", "http:///v1"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected an http:// or https:// URL"):
            http_url(text)
    for text, reason in (("http://[::1", "Invalid IPv6 URL"), ("http://127.0.0.1:99999/v1", "Port out of range")):
        with pytest.raises(argparse.ArgumentTypeError, match=rf"not a URL \({reason}"):
            http_url(text)


@pytest.mark.parametrize("argv, message", [
    (["eval", "score", "p.csv", "--bootstrap", "-1"], "kobbq eval score: argument --bootstrap: must be at least 0, not -1"),
    (["eval", "score", "p.csv", "--seed", "-5"], "kobbq eval score: argument --seed: must be at least 0, not -5"),
    (["eval", "score", "p.csv", "--prompt", "0"], "kobbq eval score: argument --prompt: must be at least 1, not 0"),
    (["eval", "prepare", "--out", "x", "--prompt", "1,-2"],
     "kobbq eval prepare: argument --prompt: prompt ids are whole numbers of at least 1, e.g. 2 or 1,2,3; not '1,-2'"),
    (["eval", "prepare", "--out", "x", "--prompt-ids", "1", "-2"],  # the spelling before issue 25, still refused alike
     "kobbq eval prepare: argument --prompt-ids: prompt ids are whole numbers of at least 1, e.g. 2 or 1,2,3; "
     "not '-2'"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--max-retries", "-1"],
     "kobbq eval run: argument --max-retries: must be at least 0, not -1"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--timeout", "nan"],
     "kobbq eval run: argument --timeout: must be a finite number more than 0, not nan"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--concurrency", "0"],
     "kobbq eval run: argument --concurrency: must be at least 1, not 0"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--prompt", ","],
     "kobbq eval run: argument --prompt: prompt ids are whole numbers of at least 1, e.g. 2 or 1,2,3; not ','"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--prompts", "1,-3"],
     "kobbq eval run: argument --prompts: prompt ids are whole numbers of at least 1, e.g. 2 or 1,2,3; not '1,-3'"),
    (["eval", "run", "--prepared", "x", "--replay", "y", "--model", "m", "--lost-after", "19"],
     "kobbq eval run: argument --lost-after: must be at least 20, not 19"),
    (["eval", "run", "--prepared", "x", "--endpoint", "", "--model", "m"],
     "kobbq eval run: argument --endpoint: expected an http:// or https:// URL such as http://127.0.0.1:8000/v1, "
     "not ''"),
])
def test_impossible_numbers_are_one_line_before_anything_runs(argv: list[str], message: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    command = message.split(":")[0]
    assert capsys.readouterr().err == f"error: {message} (see {command} --help)\n"


def test_any_argument_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "score", "p.csv", "--split", "bogus"])
    assert capsys.readouterr().err == ("error: kobbq eval score: argument --split: invalid choice: 'bogus' (choose "
                                       "from 'test', 'all') (see kobbq eval score --help)\n")


@pytest.mark.parametrize("words", [["why", "bbq:Age:1", "--release", "no-such-folder"], ["eval", "score", "--split", "x"]])
def test_a_command_run_in_process_gives_back_the_callers_signal_handlers(words):
    """A test runner's worker signals itself SIGINT to stop: a handler left by a command run in it printed an
    "interrupted (SIGINT)" line at the end of every parallel test run."""
    def callers(signum: int, frame: object) -> None:
        pass

    before = {signum: signal.signal(signum, callers) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(SystemExit) if "score" in words else contextlib.nullcontext():
            main(words)
        assert signal.getsignal(signal.SIGINT) is callers and signal.getsignal(signal.SIGTERM) is callers
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
