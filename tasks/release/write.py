"""The release's sample files (TSV, JSONL, Parquet); their publication is ``tasks.release.publish``.

The TSV files have exactly the public release's columns; ``choices`` is written as the
Python-list literal the public files use, while JSONL and Parquet carry it as a real list.
Everything is deterministic (no timestamps, sorted keys), so two builds of the same inputs
are byte-identical and the manifest's hashes can be compared across machines.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.templates.engine import Expansion
from tasks.templates.kobbq_format import SAMPLE_COLUMNS



def all_samples_name(release_name: str) -> str:
    return f"{release_name}_all_samples.tsv"


def test_samples_name(release_name: str) -> str:
    return f"{release_name}_test_samples.tsv"


def lm_eval_task_name(release_name: str) -> str:
    """``KoBBQ`` -> ``kobbq``: the lm-evaluation-harness group of a release (its tasks: ``kobbq_p1`` ...); the
    harness's task names are lower-case identifiers."""
    return re.sub(r"[^a-z0-9_]+", "_", release_name.lower()).strip("_")


def samples_frame(expansion: Expansion, indices: list[int] | None = None) -> pd.DataFrame:
    columns = expansion.columns if indices is None else {
        name: values[np.asarray(indices, dtype=np.int64)] for name, values in expansion.columns.items()}
    # Object columns share the expansion's strings; a string dtype would copy all 76k rows of text.
    return pd.DataFrame({name: columns[name] for name in SAMPLE_COLUMNS}, dtype=object, copy=False)


def write_tsv(frame: pd.DataFrame, target: Path | TextIO, header: bool = True) -> None:
    frame.to_csv(target, sep="\t", index=False, header=header, lineterminator="\n", encoding="utf-8")


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


def write_jsonl(frame: pd.DataFrame, handle: TextIO, choices: list[list[str]]) -> None:
    keys = [json.dumps(name) + ": " for name in SAMPLE_COLUMNS]
    for start in range(0, len(frame), JSONL_CHUNK):
        stop = start + JSONL_CHUNK
        columns = [_json_column(choices[start:stop] if name == "choices" else frame[name].iloc[start:stop].tolist())
                   for name in SAMPLE_COLUMNS]
        handle.writelines("{" + ", ".join(k + v for k, v in zip(keys, values)) + "}\n" for values in zip(*columns))


# The most rows a Parquet row group holds, and so the most the writer buffers in Arrow. At least the real
# release (76,568 samples) so that its file is one row group, byte for byte what a single ``to_parquet`` call
# writes; no more, because a larger release's memory would grow with its groups (131,072 before: 10x
# templates then buffered 1.7x the rows of the real release).
PARQUET_ROW_GROUP = 81_920


class ParquetRowGroups:
    """A Parquet file written chunk by chunk: rows are buffered (as Arrow, column by column) until a row group
    is full, so the file is the same whether its rows come in one piece or many. (Writing a chunked table
    cuts the pages elsewhere: other bytes.)"""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[list[pa.Array]] = []  # per column, the arrays of the rows not yet written
        self.rows = 0
        self.groups = 0

    def append(self, frame: pd.DataFrame, choices: list[list[str]]) -> None:
        if self.writer is None:
            # The schema (with pandas' metadata) of what ``to_parquet`` would write, taken from the first row.
            schema = pa.Table.from_pandas(frame.iloc[:1].assign(choices=choices[:1]), preserve_index=False).schema
            self.writer = pq.ParquetWriter(self.path, schema, compression="zstd")
            self.pending = [[] for _ in schema]
        arrays = [pa.array(choices, type=field.type) if field.name == "choices"
                  else _arrow_column(frame[field.name].tolist(), field.type) for field in self.writer.schema]
        start = 0
        while start < len(frame):  # a chunk that fills a row group is split there
            take = min(len(frame) - start, PARQUET_ROW_GROUP - self.rows)
            for pieces, array in zip(self.pending, arrays):
                pieces.append(array.slice(start, take))
            self.rows, start = self.rows + take, start + take
            if self.rows == PARQUET_ROW_GROUP:
                self._write_group()

    def _write_group(self) -> None:
        """Write the pending rows as one row group. Each column is made contiguous in turn and its pieces
        dropped, so the buffer is not held twice."""
        assert self.writer is not None
        columns = []
        for index, pieces in enumerate(self.pending):
            columns.append(pa.concat_arrays(pieces))
            self.pending[index] = []
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.writer.schema))
        self.rows, self.groups = 0, self.groups + 1

    def close(self) -> None:
        if self.writer is None:  # no rows at all: the file of an empty frame
            self.append(pd.DataFrame({name: [] for name in SAMPLE_COLUMNS}, dtype=object), [])
        if self.rows or not self.groups:
            self._write_group()
        self.writer.close()  # type: ignore[union-attr]


def _arrow_column(values: list[object], kind: pa.DataType) -> pa.Array:
    """Text is encoded here rather than by pyarrow: its conversion keeps a UTF-8 copy inside every (non-ASCII)
    Python string it reads (CPython caches it there), which would live as long as the strings."""
    if not pa.types.is_string(kind):
        return pa.array(values, type=kind)
    return pa.array([v.encode() if isinstance(v, str) else v for v in values], type=pa.binary()).cast(kind)


FORMATS = ("tsv", "jsonl", "parquet")


class SampleFiles:
    """One sample set written chunk by chunk in the given formats (``<name>.tsv``, ``.jsonl``, ``.parquet``).

    A TSV or JSONL row does not depend on its neighbours and Parquet rows are buffered into full row
    groups, so the files are byte for byte those of the whole set written at once.
    """

    def __init__(self, folder: Path, tsv_name: str, formats: tuple[str, ...] = FORMATS) -> None:
        stem = tsv_name.removesuffix(".tsv")
        self.names = [f"{stem}.{kind}" for kind in formats]
        self.text = {kind: (folder / f"{stem}.{kind}").open("w", encoding="utf-8", newline="\n")
                     for kind in formats if kind != "parquet"}
        self.parquet = ParquetRowGroups(folder / f"{stem}.parquet") if "parquet" in formats else None
        self.header = True

    def append(self, frame: pd.DataFrame) -> None:
        choices = _choice_lists(frame)
        if "tsv" in self.text:
            write_tsv(frame, self.text["tsv"], header=self.header)
        if "jsonl" in self.text:
            write_jsonl(frame, self.text["jsonl"], choices)
        if self.parquet is not None:
            self.parquet.append(frame, choices)
        self.header = False

    def __enter__(self) -> SampleFiles:
        return self

    def __exit__(self, kind, *_) -> None:
        for handle in self.text.values():
            handle.close()
        if self.parquet is not None and kind is None:
            self.parquet.close()


def write_samples(frame: pd.DataFrame, folder: Path, tsv_name: str, formats: tuple[str, ...] = FORMATS) -> list[str]:
    """One sample set, held whole, in the given formats; returns the file names written."""
    with SampleFiles(folder, tsv_name, formats) as files:
        files.append(frame)
    return files.names


# --- atomic publication ---------------------------------------------------------------------
