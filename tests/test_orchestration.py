"""The distributed evaluation's rules that need no Prefect server: the --lost-after floor, a unit's
identity, what a lost run is, the code pin against a real git repository.

The leases themselves, the take-over and the outages run against a real cluster in
``tests/test_distributed_eval.py`` (slow).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from core.errors import UserError
from flows.model_runs import RunUnit
from flows.orchestration import (LOST_AFTER_FLOOR, LOST_AFTER_SECONDS, check_code, check_lost_after, evaluation_key,
                                 lost_state, resolve_ref)
from kobbq.cli import build_parser


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


def lost_after_option() -> argparse.Action:
    run = subcommand(subcommand(build_parser("eval"), "eval"), "run")
    return next(action for action in run._actions if "--lost-after" in action.option_strings)


def test_the_command_and_the_flow_share_the_lost_after_floor_and_default() -> None:
    option = lost_after_option()
    assert option.default == LOST_AFTER_SECONDS
    assert option.type(str(LOST_AFTER_FLOOR)) == LOST_AFTER_FLOOR
    with pytest.raises(Exception, match=f"must be at least {LOST_AFTER_FLOOR}, not {LOST_AFTER_FLOOR - 1}"):
        option.type(str(LOST_AFTER_FLOOR - 1))
    check_lost_after(LOST_AFTER_FLOOR)
    with pytest.raises(UserError, match="must be at least 90 s"):
        check_lost_after(31)  # the report's value: a live unit was taken for lost between two heartbeats


def test_a_units_key_is_what_decides_its_answers_not_how_they_are_asked() -> None:
    unit = RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite")
    how = RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite", concurrency=16,
                  key_env="OTHER_KEY", max_retries=0, timeout=5.0, code_commit="a" * 40)
    assert unit.key == how.key and unit.lock == how.lock == f"kobbq-unit-{unit.key}"
    others = [RunUnit("/p", "http://10.0.0.5:8000/v1", "model-b", 1, "/out/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 2, "/out/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/other/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite", max_tokens=64)]
    assert len({unit.key} | {o.key for o in others}) == 5
    assert evaluation_key([unit.key, others[0].key]) == evaluation_key([others[0].key, unit.key])


def test_the_units_client_gets_the_commands_retries_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    unit = RunUnit("/p", "http://127.0.0.1:1/v1", "model-a", 1, "/c.sqlite", max_retries=0, timeout=7.5)
    client = unit.model_client()
    assert (client.max_retries, client.timeout_seconds) == (0, 7.5)


def test_a_lost_run_whose_answers_are_all_in_is_completed_not_crashed() -> None:
    finished, unfinished = lost_state(True, 130), lost_state(False, 130)
    assert finished.is_completed() and "every answer of the unit is in the answer cache" in finished.message
    assert unfinished.is_crashed() and "no heartbeat and no lease for 130 s" in unfinished.message


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "one")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "tag", "-a", "v1", "-m", "v1")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "two")
    return folder


def test_the_ref_is_resolved_to_the_commit_it_names_now(repository: Path) -> None:
    first, second = git(repository, "rev-parse", "v1^{commit}"), git(repository, "rev-parse", "main")
    assert resolve_ref(str(repository), "main") == second
    assert resolve_ref(str(repository), "v1") == first  # an annotated tag: its commit, not the tag object
    assert resolve_ref(str(repository), first.upper()) == first  # a commit is taken as it is
    with pytest.raises(UserError, match="'nope' is not a branch or tag"):
        resolve_ref(str(repository), "nope")
    with pytest.raises(UserError, match="cannot read"):
        resolve_ref(str(repository / "missing"), "main")


def test_a_unit_refuses_code_other_than_the_pinned_commit(repository: Path) -> None:
    head = git(repository, "rev-parse", "HEAD")
    check_code(head, repository)
    check_code(None, repository)  # nothing pinned (code outside git): nothing to compare
    with pytest.raises(UserError, match="the code changed during the evaluation"):
        check_code(git(repository, "rev-parse", "v1^{commit}"), repository)
