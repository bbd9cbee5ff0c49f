"""Exact percentiles of values that are produced in chunks and never held all at once.

The bootstrap draws its resamples in chunks (``tasks.evaluation.metrics``); keeping every resample's
value to sort them would make memory grow with ``--bootstrap``. Here the chunks are produced again
(the same seed gives the same chunks) as many times as needed to find the few order statistics a
percentile needs, in memory that does not depend on their number:

- up to ``KEEP_ALL`` values per name (2^20: 8 MiB each) are simply kept and given to ``np.percentile``,
  in one pass;
- beyond that, each pass counts the values per 16-bit bucket of an order-preserving 64-bit key of the
  float (sign, exponent, mantissa), narrowing to the bucket that holds each wanted rank, until a
  bucket holds at most ``keep`` values: the next pass keeps those and sorts them. Four passes at most
  (64 bits), usually two or three, each drawing every resample again: time grows, memory does not.

The percentile is then interpolated exactly as ``np.percentile``'s default (linear) method does, so the
bounds are the same floats whether the values fit in memory or not. NaN values are left out (a
resample whose metric is undefined), as the bootstrap always left them out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

KEEP_ALL = 1 << 20  # values per name kept whole, in one pass: 8 MiB of float64 each
KEEP = 1 << 17  # beyond that, values kept (and sorted) at once per wanted rank: 1 MiB of float64
BUCKET_BITS = 16
SIGN = np.uint64(1 << 63)

Chunks = Callable[[], Iterable[dict[str, np.ndarray]]]  # each call yields the same chunks again


def sortable_keys(values: np.ndarray) -> np.ndarray:
    """Unsigned 64-bit keys in the order of the floats (not NaN); -0.0 is taken as 0.0."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits & SIGN, ~bits, bits | SIGN)


def key_values(keys: np.ndarray) -> np.ndarray:
    """The floats of ``sortable_keys``."""
    keys = np.asarray(keys, dtype=np.uint64)
    return np.where(keys & SIGN, keys & ~SIGN, ~keys).view(np.float64)


def linear_percentile(count: int, percent: float, value_at: Callable[[int], float]) -> float:
    """``np.percentile(values, percent)`` (linear method) from the sorted values' ranks ``value_at(i)``."""
    if count == 0:
        return float("nan")
    virtual = (count - 1) * (np.float64(percent) / 100)
    if virtual >= count - 1:
        return float(value_at(count - 1))
    below = max(int(math.floor(virtual)), 0)
    gamma = virtual - below
    low, high = np.float64(value_at(below)), np.float64(value_at(below + 1))
    difference = high - low
    return float(high - difference * (1 - gamma) if gamma >= 0.5 else low + difference * gamma)


def wanted_ranks(count: int, percents: Sequence[float]) -> list[int]:
    """The ranks (0-based, in sorted order) ``linear_percentile`` reads."""
    ranks: set[int] = set()
    for percent in percents:
        linear_percentile(count, percent, lambda rank: ranks.add(rank) or 0.0)
    return sorted(ranks)


@dataclass
class _Rank:
    """One wanted rank of one metric: the key prefix its value has, found so far, and the values below it."""

    name: str
    rank: int
    prefix: int = 0
    bits: int = 0  # how many leading key bits ``prefix`` fixes
    below: int = 0  # values whose key is below every key with this prefix
    keep: bool = False  # the next pass keeps the values with this prefix (few enough)
    value: float | None = None

    @property
    def probe(self) -> tuple[str, int, int, bool]:
        return self.name, self.bits, self.prefix, self.keep


@dataclass
class _Probe:
    """What one pass gathers for the values of one metric whose keys start with ``prefix``: their count per
    next 16-bit bucket, or (``keep``) the keys themselves."""

    name: str
    bits: int
    prefix: int
    keep: bool
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(1 << BUCKET_BITS, dtype=np.int64))
    kept: list[np.ndarray] = field(default_factory=list)
    pending: list[np.ndarray] = field(default_factory=list)  # buckets not yet counted (counted in bulk)
    pending_size: int = 0

    def add(self, keys: np.ndarray) -> None:
        if self.bits:
            keys = keys[(keys >> np.uint64(64 - self.bits)) == np.uint64(self.prefix)]
        if self.keep:
            self.kept.append(keys)
            return
        self.pending.append((keys >> np.uint64(64 - self.bits - BUCKET_BITS)) & np.uint64((1 << BUCKET_BITS) - 1))
        self.pending_size += len(keys)
        if self.pending_size >= 1 << BUCKET_BITS:
            self.count()

    def count(self) -> None:
        """Add the pending buckets to the histogram (in bulk: a histogram of 65,536 buckets per small chunk
        would cost more than the chunk)."""
        if self.pending:
            buckets = np.concatenate(self.pending).astype(np.int64)
            self.histogram += np.bincount(buckets, minlength=1 << BUCKET_BITS)
            self.pending, self.pending_size = [], 0


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[~np.isnan(values)]


def streamed_percentiles(chunks: Chunks, total: int, names: Sequence[str], percents: Sequence[float],
                         keep: int | None = None, keep_all: int | None = None) -> dict[str, list[float]]:
    """Per name, ``np.percentile`` of its non-NaN values over every chunk at each of ``percents``.

    ``total`` is how many values per name the chunks hold in all: when it is at most ``keep_all`` they are
    kept and handed to ``np.percentile`` in one pass, else found by the passes described above, keeping at
    most ``keep`` at once per wanted rank (defaults: ``KEEP_ALL``, ``KEEP``).
    """
    keep = KEEP if keep is None else keep
    if total <= (KEEP_ALL if keep_all is None else keep_all):
        kept: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for chunk in chunks():
            for name in names:
                kept[name].append(_finite(chunk[name]))
        result = {}
        for name in names:
            finite = np.concatenate(kept[name]) if kept[name] else np.empty(0)
            result[name] = ([float(v) for v in np.percentile(finite, list(percents))] if len(finite)
                            else [float("nan")] * len(percents))
        return result
    first = {probe.name: probe for probe in _pass(chunks, [_Probe(name, 0, 0, False) for name in names])}
    counts = {name: int(first[name].histogram.sum()) for name in names}
    ranks = []
    for name in names:
        for rank in wanted_ranks(counts[name], percents):
            ranks.append(_narrowed(_Rank(name, rank), first[name], keep))
    while unresolved := [rank for rank in ranks if rank.value is None]:
        probes = {rank.probe: _Probe(*rank.probe) for rank in unresolved}
        _pass(chunks, list(probes.values()))
        for rank in unresolved:
            probe = probes[rank.probe]
            if probe.keep:
                keys = np.sort(np.concatenate(probe.kept))
                rank.value = float(key_values(keys[rank.rank - rank.below:][:1])[0])
            else:
                _narrowed(rank, probe, keep)
    found = {(rank.name, rank.rank): rank.value for rank in ranks}
    return {name: [linear_percentile(counts[name], percent, lambda i, name=name: found[(name, i)])
                   for percent in percents] for name in names}


def _narrowed(rank: _Rank, probe: _Probe, keep: int) -> _Rank:
    """Fix the next 16 key bits of ``rank``'s value: the bucket of ``probe``'s histogram holding it."""
    cumulative = np.cumsum(probe.histogram)
    bucket = int(np.searchsorted(cumulative, rank.rank - rank.below, side="right"))
    rank.below += int(cumulative[bucket - 1]) if bucket else 0
    rank.prefix, rank.bits = (rank.prefix << BUCKET_BITS) | bucket, rank.bits + BUCKET_BITS
    if rank.bits == 64:
        rank.value = float(key_values(np.array([rank.prefix], dtype=np.uint64))[0])
    else:
        rank.keep = int(probe.histogram[bucket]) <= keep
    return rank


def _pass(chunks: Chunks, probes: list[_Probe]) -> list[_Probe]:
    """One pass over the chunks feeding every probe."""
    by_name: dict[str, list[_Probe]] = {}
    for probe in probes:
        by_name.setdefault(probe.name, []).append(probe)
    for chunk in chunks():
        for name, mine in by_name.items():
            keys = sortable_keys(_finite(chunk[name]))
            for probe in mine:
                probe.add(keys)
    for probe in probes:
        probe.count()
    return probes
