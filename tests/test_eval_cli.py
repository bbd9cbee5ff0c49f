"""The `kobbq eval` command group: its steps' options."""

from __future__ import annotations

from kobbq.cli import build_parser


def test_eval_steps_parse() -> None:
    args = build_parser().parse_args(["eval", "score", "--mode", "all", "--ooc-as-wrong", "preds.csv"])
    assert (args.mode, args.ooc_as_wrong, [str(p) for p in args.predictions]) == ("all", True, ["preds.csv"])


def test_bootstrap_resamples_are_bounded() -> None:
    """Before: ``--bootstrap 100000000`` ran for minutes without a line."""
    import pytest

    assert build_parser().parse_args(["eval", "score", "--bootstrap", "100000", "p.csv"]).bootstrap == 100_000
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "score", "--bootstrap", "100001", "p.csv"])
