"""The bootstrap in bounded memory: chunked resamples and streamed percentiles give the numbers of drawing and
sorting every resample at once, and memory does not grow with the number of resamples."""

from __future__ import annotations

import tracemalloc
import zlib

import numpy as np
import pandas as pd
import pytest

from tasks.evaluation import metrics, streamed_percentiles
from tasks.evaluation.metrics import COUNTS, Bootstrap, bootstrap_intervals, indicators, ratios, template_counts
from tasks.evaluation.streamed_percentiles import linear_percentile, sortable_keys, key_values
from test_eval_metrics import random_rows

INTERVALS = metrics.METRICS[1:] + metrics.BBQ_METRICS


def all_at_once(counts: pd.DataFrame, mode: str, settings: Bootstrap) -> pd.DataFrame:
    """The bootstrap as one array of every resample, sorted by np.percentile (what ``eval score`` computed
    before its memory was bounded; written out here as the reference)."""
    tail = (1 - settings.level) / 2 * 100
    records = []
    for key, block in counts.groupby(level=["grouping", "group"], sort=False):
        rng = np.random.default_rng([settings.seed, zlib.crc32("|".join(map(str, key)).encode())])
        size = len(block)
        draws = rng.integers(0, size, size=(settings.replicates, size))
        weights = np.stack([(draws == t).sum(axis=1) for t in range(size)], axis=1).astype(np.float64)
        matrix = block[COUNTS].to_numpy(np.float64)
        if mode == "test":
            replicated = ratios(dict(zip(COUNTS, (weights @ matrix).T)))
        else:
            per_template = ratios(dict(zip(COUNTS, matrix.T)))
            replicated = {}
            for name in INTERVALS:
                defined = ~np.isnan(per_template[name])
                with np.errstate(invalid="ignore", divide="ignore"):
                    replicated[name] = ((weights @ np.where(defined, per_template[name], 0.0))
                                        / (weights @ defined.astype(np.float64)))
        record = dict(zip(["grouping", "group"], key))
        for name in INTERVALS:
            finite = replicated[name][~np.isnan(replicated[name])]
            low, high = np.percentile(finite, [tail, 100 - tail]) if len(finite) else (np.nan, np.nan)
            record[f"{name}_low"], record[f"{name}_high"] = float(low), float(high)
        records.append(record)
    return pd.DataFrame.from_records(records)


def example_counts(seed: int = 11, templates: int = 30) -> pd.DataFrame:
    rows = random_rows(np.random.default_rng(seed), templates=templates)
    return template_counts(rows, indicators(rows))


@pytest.mark.parametrize("mode", ["test", "all"])
def test_the_default_bootstrap_gives_the_numbers_of_every_resample_at_once(mode: str) -> None:
    counts = example_counts()
    chunked = bootstrap_intervals(counts, mode, Bootstrap())
    pd.testing.assert_frame_equal(chunked, all_at_once(counts, mode, Bootstrap()), check_exact=True)


def test_small_chunks_and_streamed_percentiles_give_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resamples drawn 50 at a time and percentiles found by passes over buckets (at most 40 values kept): the
    pooled (test) mode is exact, as counts are whole numbers; the per-template mean (all) may differ by the
    last bit of a float, as the matrix product sums in another order."""
    counts = example_counts(seed=3, templates=12)
    settings = Bootstrap(replicates=1500, seed=9)
    monkeypatch.setattr(metrics, "BOOTSTRAP_CHUNK_CELLS", 50 * 12)
    monkeypatch.setattr(streamed_percentiles, "KEEP_ALL", 40)
    monkeypatch.setattr(streamed_percentiles, "KEEP", 40)
    for mode in ("test", "all"):
        chunked = bootstrap_intervals(counts, mode, settings)
        reference = all_at_once(counts, mode, settings)
        pd.testing.assert_frame_equal(chunked, reference, check_exact=mode == "test", rtol=0, atol=1e-15)


def test_memory_does_not_grow_with_the_number_of_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five times the resamples, the same peak (chunks of 2,000 resamples, 256 values kept per wanted rank); drawing
    and keeping every resample made it grow fivefold."""
    counts = example_counts(seed=5, templates=9).loc[["overall"]]
    monkeypatch.setattr(metrics, "BOOTSTRAP_CHUNK_REPLICATES", 2_000)
    monkeypatch.setattr(streamed_percentiles, "KEEP_ALL", 256)
    monkeypatch.setattr(streamed_percentiles, "KEEP", 256)
    peaks = []
    for replicates in (30_000, 150_000):
        tracemalloc.start()
        bootstrap_intervals(counts, "test", Bootstrap(replicates=replicates))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.2 * peaks[0], peaks


def test_streamed_percentiles_are_numpys() -> None:
    rng = np.random.default_rng(4)
    for trial in range(30):
        size = int(rng.integers(1, 2500))
        values = [rng.normal(size=size), rng.integers(-3, 4, size=size) / 7.0, np.full(size, 0.25),
                  np.where(rng.random(size) < 0.4, np.nan, rng.random(size))][trial % 4]
        percents = [float(rng.random() * 100), 2.5000000000000022, 97.5, 0.0, 100.0]

        def chunks(values: np.ndarray = values) -> object:
            return ({"m": values[i:i + 113]} for i in range(0, len(values), 113))

        keep = int(rng.integers(1, 60))
        found = streamed_percentiles.streamed_percentiles(chunks, size, ["m"], percents, keep=keep,
                                                          keep_all=keep)["m"]
        finite = values[~np.isnan(values)]
        expected = np.percentile(finite, percents).tolist() if len(finite) else [np.nan] * len(percents)
        np.testing.assert_array_equal(found, expected)


def test_sortable_keys_order_floats_and_linear_percentile_interpolates_as_numpy() -> None:
    values = np.array([-np.inf, -2.5, -1e-300, 0.0, -0.0, 5e-324, 0.5, 1.0, np.inf])
    keys = sortable_keys(values)
    ordered_keys = [int(keys[i]) for i in (0, 1, 2, 3, 5, 6, 7, 8)]
    assert ordered_keys == sorted(set(ordered_keys))
    assert keys[3] == keys[4]  # -0.0 is 0.0
    np.testing.assert_array_equal(key_values(keys), values + 0.0)
    ordered = np.sort(np.random.default_rng(1).random(17))
    for percent in (0, 2.5, 50, 97.5, 99.99, 100):
        assert linear_percentile(17, percent, lambda i: ordered[i]) == np.percentile(ordered, percent)
    assert np.isnan(linear_percentile(0, 50, lambda i: 0.0))
