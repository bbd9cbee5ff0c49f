"""The bootstrap drawn in chunks gives the numbers of drawing and sorting every resample at once."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from tasks.evaluation import metrics
from tasks.evaluation.metrics import COUNTS, Bootstrap, bootstrap_intervals, indicators, ratios, template_counts
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


def test_small_chunks_give_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resamples drawn 50 at a time: the pooled (test) mode is exact, as counts are whole numbers; the
    per-template mean (all) may differ by the last bit of a float, as the matrix product sums in another order."""
    counts = example_counts(seed=3, templates=12)
    settings = Bootstrap(replicates=1500, seed=9)
    monkeypatch.setattr(metrics, "BOOTSTRAP_CHUNK_CELLS", 50 * 12)
    for mode in ("test", "all"):
        chunked = bootstrap_intervals(counts, mode, settings)
        reference = all_at_once(counts, mode, settings)
        pd.testing.assert_frame_equal(chunked, reference, check_exact=mode == "test", rtol=0, atol=1e-15)
