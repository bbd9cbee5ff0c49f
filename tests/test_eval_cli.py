"""The `kobbq eval` command group: its own steps, and the running steps when issue 13's module is present."""

from __future__ import annotations

import argparse
import sys
import types

from kobbq.cli import build_parser


def test_run_steps_are_registered_from_the_private_module_when_present(monkeypatch) -> None:
    def register(subparsers: argparse._SubParsersAction) -> None:
        subparsers.add_parser("run").set_defaults(handler=lambda args: 0, ran=True)

    monkeypatch.setitem(sys.modules, "kobbq.commands._eval_run", types.SimpleNamespace(
        register=register, __spec__=types.SimpleNamespace(name="kobbq.commands._eval_run")))
    args = build_parser().parse_args(["eval", "run"])
    assert args.ran is True


def test_eval_steps_parse_without_the_private_module() -> None:
    args = build_parser().parse_args(["eval", "score", "--mode", "all", "--ooc-as-wrong", "preds.csv"])
    assert (args.mode, args.ooc_as_wrong, [str(p) for p in args.predictions]) == ("all", True, ["preds.csv"])


def test_bootstrap_resamples_are_bounded() -> None:
    """Before: ``--bootstrap 100000000`` ran for minutes without a line."""
    import pytest

    assert build_parser().parse_args(["eval", "score", "--bootstrap", "100000", "p.csv"]).bootstrap == 100_000
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "score", "--bootstrap", "100001", "p.csv"])
