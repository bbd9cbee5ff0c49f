"""One name per concept across the commands (issue 25, point 6), and the names they replaced.

Before: ``--prompts`` was a prompt table in ``eval prepare``/``eval score`` and a list of prompt ids
in ``eval run``; prompt ids were ``--prompt-ids`` in ``prepare`` and ``--prompt`` in ``score``. Now
the table is ``--prompt-table FILE`` and prompt ids are ``--prompt ID`` everywhere; the old
spellings still parse to the same values (scripts keep working) and ``--help`` no longer shows them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kobbq.cli import build_parser

RUN = ["eval", "run", "--prepared", "p", "--replay", "r.jsonl", "--model", "m"]


def chosen(argv: list[str]) -> dict[str, object]:
    args = vars(build_parser().parse_args(argv))
    return {key: args[key] for key in ("prompts", "prompt_ids", "prompt") if key in args}


@pytest.mark.parametrize("new, old", [
    (["eval", "prepare", "--out", "o", "--prompt-table", "t.tsv", "--prompt", "3", "--prompt", "1"],
     ["eval", "prepare", "--out", "o", "--prompts", "t.tsv", "--prompt-ids", "3", "1"]),
    (["eval", "prepare", "--out", "o", "--prompt", "2,1,2"], ["eval", "prepare", "--out", "o", "--prompt-ids", "1", "2"]),
    (["eval", "score", "a.csv", "--prompt-table", "t.tsv", "--prompt", "2"],
     ["eval", "score", "a.csv", "--prompts", "t.tsv", "--prompt", "2"]),
    ([*RUN, "--prompt", "1,3", "--prompt", "2"], [*RUN, "--prompts", "3,2,1"]),
])
def test_the_old_spellings_parse_to_what_the_new_ones_do(new: list[str], old: list[str]) -> None:
    assert chosen(new) == chosen(old)
    assert any(value is not None for value in chosen(new).values())


def test_prompt_ids_are_sorted_without_repeats_and_none_when_not_given() -> None:
    assert chosen(["eval", "prepare", "--out", "o", "--prompt", "5", "--prompt", "2,5"])["prompt_ids"] == [2, 5]
    assert chosen(["eval", "prepare", "--out", "o"]) == {"prompts": None, "prompt_ids": None}
    assert chosen([*RUN, "--prompt", "4,2"]) == {"prompts": [2, 4]}
    assert chosen(RUN) == {"prompts": None}
    assert chosen(["eval", "score", "a.csv", "--prompt-table", "t.tsv"])["prompts"] == Path("t.tsv")


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("kobbq",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from subcommands(sub, (*path, name))


def test_help_shows_one_name_per_concept() -> None:
    """Every prompt option in every command's --help is --prompt-table (a file) or --prompt (ids);
    no help shows a replaced spelling."""
    seen = {}
    for path, parser in subcommands(build_parser()):
        text = parser.format_help()
        for old in ("--prompts", "--prompt-ids"):
            assert old not in text, f"{' '.join(path)} --help shows {old}"
        for action in parser._actions:
            if action.help is not argparse.SUPPRESS and any(o.startswith("--prompt") for o in action.option_strings):
                seen.setdefault(action.option_strings[0], set()).add(" ".join(path))
    assert seen == {"--prompt-table": {"kobbq eval prepare", "kobbq eval score"},
                    "--prompt": {"kobbq eval prepare", "kobbq eval score", "kobbq eval run"}}


def test_an_output_folder_is_out_everywhere() -> None:
    """Every command that writes a folder or file it is told takes it as --out (no --output, --out-dir, ...)."""
    shown = {option for _, parser in subcommands(build_parser()) for action in parser._actions
             if action.help is not argparse.SUPPRESS for option in action.option_strings}
    assert "--out" in shown
    assert not {option for option in shown if option.startswith("--out") and option != "--out"}
    assert not {option for option in shown if option.startswith(("--prompt-", "--prompts"))} - {"--prompt-table"}
