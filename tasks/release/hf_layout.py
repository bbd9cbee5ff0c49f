"""The release's Parquet laid out for ``datasets`` (``docs/reference/release-folder.md``): one config per category
plus ``all``. A category's rows of a split are written once (``data/<Category>/<split>.parquet``); ``all`` lists
those files one by one, not as a glob, so that a folder that lost one fails to load, naming it, instead of loading
the rest as if it were all. ``all`` cannot name a split: ``datasets`` reserves it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.profile import Profile
from tasks.release.write import all_samples_name, release_arrow_memory, test_samples_name

DATA_DIR = "data"
ALL_CONFIG = "all"
TEST_SPLIT = "test"
ALL_SAMPLES_SPLIT = "all_samples"
BATCH_ROWS = 65_536  # rows read at a time, so memory does not grow with the release


@dataclass(frozen=True)
class Config:
    """One config of the dataset card: its name, and per split its data files and rows."""

    name: str
    files: dict[str, str | list[str]]  # split -> path(s) relative to the release folder
    rows: dict[str, int]  # split -> rows

    def metadata(self) -> dict[str, object]:
        """The config as the card's YAML ``configs`` list holds it."""
        return {"config_name": self.name, **({"default": True} if self.name == ALL_CONFIG else {}),
                "data_files": [{"split": split, "path": path} for split, path in self.files.items()]}


def split_sources(profile: Profile, name: str | None = None) -> dict[str, str]:
    """Split -> the Parquet file it is cut from (``name``: the files' prefix when not the release's: a twin's)."""
    name = name or profile.release.name
    if profile.release.layout == "per-category-csv":
        return {TEST_SPLIT: all_samples_name(name, ".parquet")}
    return {ALL_SAMPLES_SPLIT: all_samples_name(name, ".parquet"), TEST_SPLIT: test_samples_name(name, ".parquet")}


def data_file(category: str, split: str) -> str:
    return f"{DATA_DIR}/{category}/{split}.parquet"


def row_categories(batch: pa.RecordBatch, profile: Profile) -> tuple[np.ndarray, list[str]]:
    """Each row's category as a code into the categories in the order they first appear: a generated release's
    category column, else its sample ID's prefix (computed in Arrow: Python strings per row cost time and memory)."""
    fmt = profile.templates.workbook
    values = batch.column(fmt.output_of(fmt.category_column)) if fmt is not None else \
        pc.list_element(pc.split_pattern(batch.column("sample_id"), "-", max_splits=1), 0)
    encoded = pc.dictionary_encode(values)  # its dictionary in the order of first appearance
    prefixes = {} if fmt is not None else {c.sample_prefix: c.name for c in profile.categories}
    names = [prefixes.get(value, value) for value in encoded.dictionary.to_pylist()]
    distinct = list(dict.fromkeys(names))  # two prefixes may name one category
    return np.array([distinct.index(name) for name in names], dtype=np.int64)[encoded.indices.to_numpy()], distinct


def answer_positions(choices: pa.Array, answers: pa.Array) -> pa.Array:
    """Each row's answer's index in its choices (the first equal one, as ``list.index``); null where it is not among
    them, which the release checks then report (nothing is published)."""
    parents = pc.list_parent_indices(choices).to_numpy()
    equal = pc.fill_null(pc.equal(pc.list_flatten(choices), pc.take(answers, parents)), False)
    found = np.flatnonzero(equal.to_numpy(zero_copy_only=False))
    rows, first = np.unique(parents[found], return_index=True)  # ``found`` ascends: each row's first match
    positions = np.full(len(answers), -1)
    positions[rows] = found[first] - np.searchsorted(parents, rows)  # minus where the row's choices begin
    return pa.array(positions, pa.int64(), mask=positions < 0)


def dataset_batch(batch: pa.RecordBatch, categories: list[str], codes: np.ndarray, profile: Profile) \
        -> pa.RecordBatch:
    """A batch of the release's Parquet as the dataset's files hold it (BBQ's analysis columns, no ``prediction``).
    A sample ID ends in ``-amb|dis-bsd|cnt`` (``tasks.templates.sample_ids``; one that does not fails the checks)."""
    if profile.templates.workbook is not None:
        return batch
    ids = batch.column("sample_id")
    columns = {name: batch.column(name) for name in batch.schema.names if name != "prediction"}
    columns.update({
        "category": pc.take(pa.array(categories, pa.string()), pa.array(codes)),
        "context_condition": pc.if_else(pc.equal(pc.utf8_slice_codeunits(ids, -7, -4), "amb"), "ambig", "disambig"),
        "question_polarity": pc.if_else(pc.equal(pc.utf8_slice_codeunits(ids, -3), "bsd"), "neg", "nonneg"),
        "label": answer_positions(batch.column("choices"), batch.column("answer"))})
    return pa.RecordBatch.from_pydict(columns)


def batches(parquet: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """The file's rows a row group at a time, on this thread: a batch across two row groups held both, and Arrow's
    reading threads kept memory of their own (at 5x the real templates, ~60 MB more than at 1x; ~10 MB without)."""
    for group in range(parquet.num_row_groups):
        yield from parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], use_threads=False)


def category_rows(batch: pa.RecordBatch, codes: np.ndarray, code: int) -> pa.RecordBatch:
    """The rows whose code is ``code``, in order: a slice when they are together (no copy), else a copy."""
    rows = np.flatnonzero(codes == code)
    return batch.slice(rows[0], len(rows)) if rows[-1] - rows[0] + 1 == len(rows) else batch.take(rows)


def write_layout(folder: Path, profile: Profile, name: str | None = None) -> list[Config]:
    """Cut every split's Parquet file by category into ``data/<Category>/<split>.parquet``, a batch at a time, a
    category's file in every split (possibly empty), so every config has the same splits; the configs."""
    rows: dict[str, dict[str, int]] = {}
    schemas = {}
    for split, source in split_sources(profile, name).items():
        parquet = pq.ParquetFile(folder / source)
        empty = pa.RecordBatch.from_pylist([], schema=parquet.schema_arrow)
        schemas[split] = dataset_batch(empty, [], np.array([], dtype=np.int64), profile).schema
        writers: dict[str, pq.ParquetWriter] = {}
        try:
            for batch in batches(parquet):
                codes, names = row_categories(batch, profile)
                laid_out = dataset_batch(batch, names, codes, profile)
                for index, category in enumerate(names):
                    chosen = category_rows(laid_out, codes, index)
                    if category not in writers:
                        path = folder / data_file(category, split)
                        path.parent.mkdir(parents=True, exist_ok=True)
                        writers[category] = pq.ParquetWriter(path, schemas[split], compression="zstd")
                    writers[category].write_batch(chosen)
                    rows.setdefault(category, {})[split] = rows.get(category, {}).get(split, 0) + chosen.num_rows
                del laid_out, chosen
                release_arrow_memory()
        finally:
            for writer in writers.values():
                writer.close()
    for category, counts in rows.items():
        for split, schema in schemas.items():
            if split not in counts:
                pq.write_table(schema.empty_table(), folder / data_file(category, split), compression="zstd")
                counts[split] = 0
    return configs(profile, rows, list(schemas))


def configs(profile: Profile, rows: dict[str, dict[str, int]], splits: list[str]) -> list[Config]:
    """``all`` first, then one config per category in the profile's order (others after, by name)."""
    if ALL_CONFIG in rows:
        raise ValueError(f"a category may not be called {ALL_CONFIG!r}: that config reads every category")
    order = category_order(profile, set(rows))
    every = Config(ALL_CONFIG, {split: [data_file(c, split) for c in order] for split in splits},
                   {split: sum(rows[c][split] for c in order) for split in splits})
    return [every] + [Config(c, {split: data_file(c, split) for split in splits}, rows[c]) for c in order]


def category_order(profile: Profile, categories: set[str]) -> list[str]:
    """The profile's order, other categories after it by name."""
    return [c for c in profile.category_names if c in categories] + sorted(categories - set(profile.category_names))
