"""The command line behaves like its neighbours: a closed stdout, a bare command group, a damaged release,
a non-terminal's progress, shell completion, summaries in words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from kobbq.cli import main

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
