"""Every ``--help`` tells the truth about defaults and numbers (issue 25, point 6).

Before: ``survey ingest --help`` named ``survey/<profile>/overrides.csv`` as the default overrides
(they are in the profile's folder, ``core/profiles/<profile>/survey/``); the ``--out`` of
``translate``, ``postedit`` and ``eval import-lm-eval`` and ``eval run``'s ``--key-env`` did not
show their defaults; ``eval --help`` said "5 prompts" where the es and ca prompt tables have 2.
The help of every option with a default now shows it (rendered from the default itself,
``%(default)s``), and a count of prompts or choice orders in any help must hold for every profile.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from core.profile import available_profiles, load_profile
from kobbq.arguments import shown
from kobbq.cli import build_parser
from tasks.evaluation.prompts import ORDERS, read_prompt_table, resolve_prompt_table

NO_DEFAULT = (None, False, True, [], argparse.SUPPRESS)
FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction, argparse._HelpAction,
         argparse._VersionAction, argparse._CountAction)


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("kobbq",)):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from subcommands(sub, (*path, name))


COMMANDS = dict(subcommands(build_parser()))


def default_as_shown(value: object) -> str:
    if isinstance(value, Path):
        return shown(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def options_with_a_default(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if (action.option_strings and not isinstance(action, FLAGS) and action.help is not argparse.SUPPRESS
                and not any(action.default is value or action.default == value for value in NO_DEFAULT)):
            yield action


def shows_default(action: argparse.Action, formatter: argparse.HelpFormatter) -> bool:
    """The help, as printed, says ``default: ...<the default>...`` (the value whole, not part of a longer one)."""
    help_text = " ".join(formatter._expand_help(action).split())
    value = re.escape(default_as_shown(action.default))
    return re.search(rf"\bdefault:[^)]*(?<![\w/.-]){value}(?![\w/.-])", help_text) is not None


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_default_is_shown_as_it_is(command: str) -> None:
    parser = COMMANDS[command]
    text = parser.format_help()  # a broken %(...)s would raise here
    formatter = parser._get_formatter()
    for action in options_with_a_default(parser):
        assert shows_default(action, formatter), (
            f"{command} {action.option_strings[0]}: the default {action.default} is not shown: {action.help!r}")
    assert "survey/<profile>" not in text


def test_the_checker_catches_an_unshown_or_wrong_default() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("build/translation"), help="output folder")
    parser.add_argument("--retries", type=int, default=5, help="retries (default: 50)")
    parser.add_argument("--seed", type=int, default=42, help="seed (default: %(default)s)")
    formatter = parser._get_formatter()
    assert [a.dest for a in options_with_a_default(parser) if shows_default(a, formatter)] == ["seed"]


def prompt_counts() -> set[int]:
    counts = set()
    for name in available_profiles():
        profile = load_profile(name)
        try:
            table, _ = resolve_prompt_table(profile, None)
        except Exception:  # a profile without a prompt table states no count
            continue
        counts.add(len(read_prompt_table(table)))
    return counts


def test_no_help_states_a_count_that_a_profile_contradicts() -> None:
    counts = {"prompt": prompt_counts(), "choice order": {len(ORDERS)}}
    assert counts["prompt"] >= {2, 5}  # es/ca and ko (or its fallback): the counts really differ
    for command, parser in COMMANDS.items():
        text = " ".join(parser.format_help().split())
        for noun, truth in counts.items():
            for stated in re.findall(rf"\b(\d+) {noun}s?\b", text):
                assert {int(stated)} == truth, f"{command} --help says {stated} {noun}s; the profiles have {truth}"


@pytest.mark.flow
def test_survey_ingest_writes_every_file_its_help_names(tmp_path: Path) -> None:
    """The help listed survey_votes.csv, which only a release had: every output file it names is written."""
    from core.paths import PROJECT_ROOT
    from kobbq.cli import main

    example = PROJECT_ROOT / "survey" / "ko" / "example"
    assert main(["survey", "ingest", "--profile", "ko", "--results", str(example / "responses.csv"),
                 "--questions", str(example / "questions.csv"), "--reading", str(example / "reading_results.csv"),
                 "--out", str(tmp_path), "--quiet"]) == 0
    written = {path.name for path in tmp_path.rglob("*") if path.is_file()}
    description = " ".join(COMMANDS["kobbq survey ingest"].description.split())
    named = set(re.findall(r"\b\w+\.(?:csv|md|json|parquet)\b", description.split("write", 1)[1]))
    assert "survey_votes.csv" in named and named <= written, (named, written)
