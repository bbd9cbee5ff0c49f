"""The release's Parquet laid out for ``datasets`` (``docs/reference/release-folder.md``): one config per category
plus ``all``. A category's rows of a split are written once (``data/<Category>/<split>.parquet``); ``all`` lists
those files one by one, not as a glob, so that a folder that lost one fails to load, naming it, instead of loading
the rest as if it were all. ``all`` cannot name a split: ``datasets`` reserves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.profile import Profile
from tasks.release.write import all_samples_name, release_arrow_memory, test_samples_name
from tasks.templates.sample_ids import SAMPLE_ID

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


def row_categories(batch: pa.RecordBatch, profile: Profile) -> np.ndarray:
    """Each row's category: a generated release's category column, else its sample ID's prefix."""
    fmt = profile.templates.workbook
    if fmt is not None:
        return batch.column(fmt.output_of(fmt.category_column)).to_numpy(zero_copy_only=False).astype(object)
    by_prefix = {c.sample_prefix: c.name for c in profile.categories}
    prefixes = pc.replace_substring_regex(batch.column("sample_id"), pattern="(?s)-.*", replacement="",
                                          max_replacements=1).to_numpy(zero_copy_only=False)
    return np.array([by_prefix.get(prefix, prefix) for prefix in prefixes], dtype=object)


def dataset_batch(batch: pa.RecordBatch, categories: np.ndarray, profile: Profile) -> pa.RecordBatch:
    """A batch of the release's Parquet as the dataset's files hold it (BBQ's analysis columns, no ``prediction``)."""
    if profile.templates.workbook is not None:
        return batch
    parts = pc.extract_regex(batch.column("sample_id"), SAMPLE_ID)
    choices, answers = batch.column("choices").to_pylist(), batch.column("answer").to_pylist()
    columns = {name: batch.column(name) for name in batch.schema.names if name != "prediction"}
    columns.update({
        "category": pa.array(categories, pa.string()),
        "context_condition": pc.if_else(pc.equal(pc.struct_field(parts, "context"), "amb"), "ambig", "disambig"),
        "question_polarity": pc.if_else(pc.equal(pc.struct_field(parts, "question"), "bsd"), "neg", "nonneg"),
        "label": pa.array([options.index(answer) for options, answer in zip(choices, answers)], pa.int64())})
    return pa.RecordBatch.from_pydict(columns)


def write_layout(folder: Path, profile: Profile, name: str | None = None) -> list[Config]:
    """Cut every split's Parquet file by category into ``data/<Category>/<split>.parquet``, a batch at a time, a
    category's file in every split (possibly empty), so every config has the same splits; the configs."""
    rows: dict[str, dict[str, int]] = {}
    schemas = {}
    for split, source in split_sources(profile, name).items():
        parquet = pq.ParquetFile(folder / source)
        empty = pa.RecordBatch.from_pylist([], schema=parquet.schema_arrow)
        schemas[split] = dataset_batch(empty, np.array([], dtype=object), profile).schema
        writers: dict[str, pq.ParquetWriter] = {}
        try:
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
                # One copy of the batch with its rows grouped by category (file order kept within a category),
                # then a slice per category, which copies nothing.
                categories = row_categories(batch, profile)
                names, codes = np.unique(categories, return_inverse=True)
                order = np.argsort(codes, kind="stable")
                grouped = dataset_batch(batch, categories, profile).take(pa.array(order))
                starts = np.searchsorted(codes[order], np.arange(len(names) + 1))
                for index in sorted(range(len(names)), key=lambda i: order[starts[i]]):  # first appearance
                    category, chosen = names[index], grouped.slice(starts[index], starts[index + 1] - starts[index])
                    if category not in writers:
                        path = folder / data_file(category, split)
                        path.parent.mkdir(parents=True, exist_ok=True)
                        writers[category] = pq.ParquetWriter(path, schemas[split], compression="zstd")
                    writers[category].write_batch(chosen)
                    rows.setdefault(category, {})[split] = rows.get(category, {}).get(split, 0) + chosen.num_rows
                del grouped, chosen
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
