"""The release's sample files (TSV, JSONL, Parquet); their publication is ``tasks.release.publish``.

The TSV files have exactly the public release's columns; ``choices`` is written as the
Python-list literal the public files use, while JSONL and Parquet carry it as a real list.
Everything is deterministic (no timestamps, sorted keys), so two builds of the same inputs
are byte-identical and the manifest's hashes can be compared across machines.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.release.engine import Expansion
from tasks.release.expand import SAMPLE_COLUMNS



def all_samples_name(release_name: str) -> str:
    return f"{release_name}_all_samples.tsv"


def test_samples_name(release_name: str) -> str:
    return f"{release_name}_test_samples.tsv"


def samples_frame(expansion: Expansion, indices: list[int] | None = None) -> pd.DataFrame:
    columns = expansion.columns if indices is None else {
        name: values[np.asarray(indices, dtype=np.int64)] for name, values in expansion.columns.items()}
    # Object columns share the expansion's strings; a string dtype would copy all 76k rows of text.
    return pd.DataFrame({name: columns[name] for name in SAMPLE_COLUMNS}, dtype=object, copy=False)


def write_tsv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, sep="\t", index=False, lineterminator="\n", encoding="utf-8")


def _choice_lists(frame: pd.DataFrame) -> list[list[str]]:
    """The list literal of every row, parsed once per distinct value (there are few)."""
    parsed = {value: list(ast.literal_eval(value)) for value in frame["choices"].unique()}
    return [parsed[value] for value in frame["choices"]]


def _json_column(values: list[object]) -> list[str]:
    """JSON of each value, encoded once per distinct value: contexts and choices repeat 2-4 times."""
    encoded: dict[str, str] = {}
    return [encoded.get(v) or encoded.setdefault(v, json.dumps(v, ensure_ascii=False)) if isinstance(v, str)
            else json.dumps(v, ensure_ascii=False) for v in values]


JSONL_CHUNK = 10_000  # rows encoded at a time, so memory does not grow with the release


def write_jsonl(frame: pd.DataFrame, path: Path, choices: list[list[str]]) -> None:
    keys = [json.dumps(name) + ": " for name in SAMPLE_COLUMNS]
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for start in range(0, len(frame), JSONL_CHUNK):
            stop = start + JSONL_CHUNK
            columns = [_json_column(choices[start:stop] if name == "choices" else frame[name].iloc[start:stop].tolist())
                       for name in SAMPLE_COLUMNS]
            handle.writelines("{" + ", ".join(k + v for k, v in zip(keys, values)) + "}\n"
                              for values in zip(*columns))


# Rows converted to Arrow at a time, and the most a row group holds. At least the real release (76,568
# samples) so that its file is one row group, byte for byte what a single ``to_parquet`` call writes; a
# larger release gets more row groups instead of a whole second copy of itself in Arrow.
PARQUET_ROW_GROUP = 131_072


def write_parquet(frame: pd.DataFrame, path: Path, choices: list[list[str]]) -> None:
    # The schema (with pandas' metadata) of what ``to_parquet`` would write, taken from the first row.
    schema = pa.Table.from_pandas(frame.iloc[:1].assign(choices=choices[:1]), preserve_index=False).schema
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for start in range(0, max(len(frame), 1), PARQUET_ROW_GROUP):
            stop = start + PARQUET_ROW_GROUP
            writer.write_table(pa.Table.from_arrays(
                [pa.array(choices[start:stop], type=field.type) if field.name == "choices"
                 else _arrow_column(frame[field.name].iloc[start:stop].tolist(), field.type) for field in schema],
                schema=schema))


def _arrow_column(values: list[object], kind: pa.DataType) -> pa.Array:
    """Text is encoded here rather than by pyarrow: its conversion keeps a UTF-8 copy inside every (non-ASCII)
    Python string it reads (CPython caches it there), which would live as long as the expansion: +340 MB
    for 765,680 samples."""
    if not pa.types.is_string(kind):
        return pa.array(values, type=kind)
    return pa.array([v.encode() if isinstance(v, str) else v for v in values], type=pa.binary()).cast(kind)


def write_samples(frame: pd.DataFrame, folder: Path, tsv_name: str, formats: tuple[str, ...] = ("tsv", "jsonl",
                                                                                                  "parquet")
                  ) -> list[str]:
    """One sample set in the given formats; returns the file names written."""
    writers = {"tsv": lambda path, choices: write_tsv(frame, path), "jsonl": lambda path, choices: write_jsonl(
        frame, path, choices), "parquet": lambda path, choices: write_parquet(frame, path, choices)}
    choices = _choice_lists(frame)
    names = []
    for kind in formats:
        name = tsv_name.removesuffix(".tsv") + "." + kind
        writers[kind](folder / name, choices)
        names.append(name)
    return names


def write_json(data: object, path: Path) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def sample_counts(frame: pd.DataFrame, by: str) -> dict[str, int]:
    return dict(sorted(Counter(frame[by].tolist()).items()))


# --- atomic publication ---------------------------------------------------------------------
