"""The command line behaves like its neighbours: a closed stdout, a bare command group, a damaged release,
a non-terminal's progress, shell completion, summaries in words."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from core.console import LineProgress
from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from kobbq.cli import main
from tasks.evaluation.answer_cache import Answer, AnswerCache, GenerationSettings
from tasks.evaluation.runs import Request, answer_requests

SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for cat, grep or git whose reader has gone


@pytest.mark.subprocess
def test_a_closed_stdout_ends_quietly_with_the_exit_code_of_a_closed_pipe():
    child = subprocess.Popen([sys.executable, "-m", "kobbq", "diff", str(EXAMPLE_TEMPLATES), str(EXAMPLE_TEMPLATES)],
                             cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # `| head -0`: the reader has gone before the first line
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == SIGPIPE_EXIT
    assert stderr == ""


@pytest.mark.parametrize("group", ["eval", "labels", "survey", "postedit"])
def test_a_bare_command_group_is_a_one_line_usage_error(group, capsys):
    with pytest.raises(SystemExit) as ended:
        main([group])
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith(f"error: kobbq {group}: ")


class EchoModel:
    """Answers every prompt at once, with its own text."""

    def __init__(self) -> None:
        self.settings = GenerationSettings("local", "echo")

    def ask(self, request_id: str, prompt_id: int, prompt: str) -> Answer:
        return Answer(prompt, "ok")


def test_a_run_on_a_non_terminal_says_its_progress_in_plain_lines(tmp_path, capsys):
    requests = [Request(f"s{i}-0", f"s{i}", 1, f"question {i}") for i in range(50)]
    with AnswerCache(tmp_path / "cache.sqlite") as cache:
        answer_requests(requests, EchoModel(), cache, concurrency=2)
    err = capsys.readouterr().err  # pytest's capture: not a terminal, as a log file or CI is not
    assert "\r" not in err
    assert err.splitlines() == ["echo: 50 of 50 requests answered (100%, 0 s)"]


def test_plain_progress_lines_come_every_ten_seconds_and_at_the_end():
    now = [0.0]
    lines = io.StringIO()
    with LineProgress(6, "m", "requests answered", stream=lines, clock=lambda: now[0]) as progress:
        for seconds in (3, 9, 11, 15, 21.5, 22):
            now[0] = seconds
            progress.update()
    assert lines.getvalue().splitlines() == ["m: 3 of 6 requests answered (50%, 11 s)",
                                             "m: 5 of 6 requests answered (83%, 22 s)",
                                             "m: 6 of 6 requests answered (100%, 22 s)"]


@pytest.mark.subprocess
def test_the_shell_completes_commands_and_options(tmp_path):
    """What ``eval "$(register-python-argcomplete kobbq)"`` asks the command at each tab (the answer in a file)."""
    def completions(line: str) -> set[str]:
        answer = tmp_path / "completions"
        env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
               "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}
        subprocess.run([sys.executable, "-m", "kobbq"], env=env, cwd=PROJECT_ROOT, check=True, timeout=120)
        return set(answer.read_text().split("\013"))

    assert completions("kobbq ev") == {"eval "}
    assert completions("kobbq eval sc") == {"score "}
    assert completions("kobbq eval score --boot") == {"--bootstrap "}
