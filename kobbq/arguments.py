"""Number arguments that argparse refuses when they are impossible (``--bootstrap -1``, ``--timeout 0``).

A bad number is told at once, in one line naming the option (``kobbq.cli``'s parser), before
anything is read, started or sent; without these types it was accepted and reported
(``-1 bootstrap resamples``), or surfaced later as a traceback from numpy or the HTTP client.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole_number(minimum: int) -> Callable[[str], int]:
    """An integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def real_number(minimum: float = 0.0, above: bool = False) -> Callable[[str], float]:
    """A finite number of at least ``minimum`` (more than ``minimum`` with ``above``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            bound = f"more than {minimum:g}" if above else f"at least {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}, not {text}")
        return value

    return parse


POSITIVE = whole_number(1)  # counts of things that must happen at least once: requests in flight, tokens, shards
NOT_NEGATIVE = whole_number(0)  # seeds, retries, resamples (0: none)
