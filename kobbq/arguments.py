"""Arguments that argparse refuses when they are impossible (``--bootstrap -1``, ``--timeout 0``, an
endpoint without ``http://``).

A bad value is told at once, in one line naming the option (``kobbq.cli``'s parser), before
anything is read, started or sent; without these types it was accepted and reported
(``-1 bootstrap resamples``), or surfaced later as a traceback from numpy or the HTTP client.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from urllib.parse import urlsplit


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


def http_url(text: str) -> str:
    """An http(s) URL with a host and, if any, a valid port: an API's base URL."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number or out of range)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL ({exc}): {text!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL such as http://127.0.0.1:8000/v1, "
                                         f"not {text!r}")
    return text


POSITIVE = whole_number(1)  # counts of things that must happen at least once: requests in flight, tokens, shards
NOT_NEGATIVE = whole_number(0)  # seeds, retries, resamples (0: none)
