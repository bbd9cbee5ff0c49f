"""The release's sample files (TSV, JSONL, Parquet; or one CSV per category), the same bytes from the same inputs
(no timestamps, sorted keys), so that manifests' hashes compare across machines. The TSV has the public release's
columns, ``choices`` as the Python-list literal; JSONL and Parquet carry a real list. The per-category CSVs (EsBBQ's
``<Category>.full.csv``) are the upstream files' exact bytes (minimal quoting, ``\\n``, list literals), for ``cmp``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from json.encoder import encode_basestring
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.tables import delimited_text
from tasks.templates.engine import Expansion
from tasks.templates.kobbq_format import SAMPLE_COLUMNS


def release_arrow_memory() -> None:
    """Give the Arrow buffers freed since back to the system (mimalloc keeps them, and a build's peak grows with the
    chunks written: five times the real templates, 1.26x the peak of one time without this, 1.11x with it)."""
    pa.default_memory_pool().release_unused()


def all_samples_name(release_name: str, suffix: str = ".tsv") -> str:
    """The all-samples file's name (``KoBBQ_all_samples.tsv``; ``suffix``: its JSONL or Parquet twin's)."""
    return f"{release_name}_all_samples{suffix}"


def test_samples_name(release_name: str, suffix: str = ".tsv") -> str:
    return f"{release_name}_test_samples{suffix}"


def lm_eval_task_name(release_name: str) -> str:
    """``KoBBQ`` -> ``kobbq``: a release's lm-evaluation-harness group (task names are lower-case identifiers)."""
    return re.sub(r"[^a-z0-9_]+", "_", release_name.lower()).strip("_")


def samples_frame(expansion: Expansion, indices: list[int] | None = None) -> pd.DataFrame:
    columns = expansion.columns if indices is None else {
        name: values[np.asarray(indices, dtype=np.int64)] for name, values in expansion.columns.items()}
    # Object columns share the expansion's strings; a string dtype would copy all 76k rows of text.
    return pd.DataFrame({name: columns[name] for name in SAMPLE_COLUMNS}, dtype=object, copy=False)


TEXT_CHUNK = 10_000  # rows formatted as one string and written at once, so memory does not grow with a frame


def _row_slices(frame: pd.DataFrame) -> Iterator[slice]:
    return (slice(start, start + TEXT_CHUNK) for start in range(0, len(frame), TEXT_CHUNK))


def write_tsv(frame: pd.DataFrame, target: Path | TextIO, header: bool = True) -> None:
    """``frame.to_csv`` with tabs, byte for byte. Rows whose fields csv writes as they are (all a release's) are
    joined here, ~6x faster than pandas; any other rows, and the header, are left to pandas."""
    if isinstance(target, Path):
        with target.open("w", encoding="utf-8", newline="\n") as handle:
            write_tsv(frame, handle, header)
        return
    if header:
        _pandas_tsv(frame.iloc[:0], target, header=True)
    for rows in _row_slices(frame):
        columns = [frame[name].iloc[rows].tolist() for name in frame.columns]
        if _verbatim(columns):
            target.write(_rows_text(columns, [""] + ["\t"] * (len(columns) - 1), "\n"))
        else:
            _pandas_tsv(frame.iloc[rows], target, header=False)


def _rows_text(columns: list[list[str]], before: list[str], end: str) -> str:
    """The rows as one string: ``before[i]`` ahead of each value of column ``i``, ``end`` after each row's last.
    The pieces are put in place a column at a time (by slice assignment), ~2x faster than row by row."""
    rows, step = len(columns[0]), 2 * len(columns) + 1
    pieces = [end] * (rows * step)
    for index, (text, values) in enumerate(zip(before, columns)):
        pieces[2 * index::step] = [text] * rows
        pieces[2 * index + 1::step] = values
    return "".join(pieces)


def _pandas_tsv(frame: pd.DataFrame, handle: TextIO, header: bool) -> None:
    frame.to_csv(handle, sep="\t", index=False, header=header, lineterminator="\n", encoding="utf-8")


_TSV_QUOTED = ("\t", '"', "\n", "\r")  # what makes csv quote a field (a lone carriage return, on some Pythons)


def _verbatim(columns: list[list[object]]) -> bool:
    """Whether csv writes each value as it is: text with no tab, quote or line break, in rows of more than one field
    (csv quotes a lone empty field)."""
    if len(columns) < 2:
        return False
    for values in columns:
        try:
            text = "".join(values)  # type: ignore[arg-type]
        except TypeError:  # not all text: pandas formats it
            return False
        if any(mark in text for mark in _TSV_QUOTED):
            return False
    return True


_JSON = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(value, ensure_ascii=False), its encoder built once


def _json_texts(values: list[object]) -> list[str]:
    """JSON of each value; text straight to the string function ``_JSON`` calls (through ``_JSON``: twice the cost)."""
    try:
        return list(map(encode_basestring, values))
    except TypeError:  # not all text
        return list(map(_JSON, values))


@dataclass(frozen=True)
class Choices:
    """A frame's ``choices`` literals, each distinct one parsed once: row ``i`` has ``lists[codes[i]]``."""

    codes: np.ndarray
    lists: list[list[str]]

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Choices:
        codes, literals = pd.factorize(frame["choices"].to_numpy(), use_na_sentinel=False)
        return cls(codes, [parse_list_literal(literal) for literal in literals])

    @cached_property
    def json_lists(self) -> np.ndarray:
        """The JSON of each distinct list."""
        return np.array([_JSON(choices) for choices in self.lists], dtype=object)

    def json_rows(self, rows: slice) -> list[str]:
        return self.json_lists[self.codes[rows]].tolist()

    def arrow(self, kind: pa.DataType) -> pa.Array:
        return pa.array(self.lists, type=kind).take(pa.array(self.codes))


def parse_list_literal(literal: str) -> list[str]:
    """The list a ``choices`` literal (``repr`` of a list of text) stands for: split at its ``', '`` (~10x faster than
    ``ast.literal_eval``) when ``repr`` of the pieces gives the literal back, which makes them exactly its list."""
    if literal.startswith("['") and literal.endswith("']"):
        items = literal[2:-2].split("', '")
        if repr(items) == literal:
            return items
    return list(ast.literal_eval(literal))


def write_jsonl(frame: pd.DataFrame, handle: TextIO, choices: Choices) -> None:
    keys = [json.dumps(name) + ": " for name in SAMPLE_COLUMNS]
    before = ["{" + keys[0]] + [", " + key for key in keys[1:]]
    for rows in _row_slices(frame):
        columns = [choices.json_rows(rows) if name == "choices" else _json_texts(frame[name].iloc[rows].tolist())
                   for name in SAMPLE_COLUMNS]
        handle.write(_rows_text(columns, before, "}\n"))


# The most rows a Parquet row group (and the writer's buffer) holds: at least the real release's 76,568, so its file
# is one row group as one ``to_parquet`` writes; no more, so a larger release's memory does not grow with its groups.
PARQUET_ROW_GROUP = 81_920


class ParquetRowGroups:
    """A Parquet file written chunk by chunk, rows buffered as Arrow until a row group is full, so the file is the
    same whether its rows come in one piece or many (a chunked table would cut the pages elsewhere: other bytes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[list[pa.Array]] = []  # per column, the arrays of the rows not yet written
        self.rows = 0
        self.groups = 0

    def append(self, frame: pd.DataFrame, choices: Choices) -> None:
        if self.writer is None:
            # The schema (with pandas' metadata) of what ``to_parquet`` would write, taken from the first row.
            first = frame.iloc[:1].assign(choices=[choices.lists[code] for code in choices.codes[:1]])
            schema = pa.Table.from_pandas(first, preserve_index=False).schema
            self.writer = pq.ParquetWriter(self.path, schema, compression="zstd")
            self.pending = [[] for _ in schema]
        arrays = [choices.arrow(field.type) if field.name == "choices"
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
        """Write the pending rows as one row group, a column at a time, so the buffer is not held twice."""
        assert self.writer is not None
        columns = []
        for index, pieces in enumerate(self.pending):
            columns.append(pa.concat_arrays(pieces))
            self.pending[index] = []
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.writer.schema))
        self.rows, self.groups = 0, self.groups + 1

    def close(self) -> None:
        if self.writer is None:  # no rows at all: the file of an empty frame
            empty = pd.DataFrame({name: [] for name in SAMPLE_COLUMNS}, dtype=object)
            self.append(empty, Choices.of(empty))
        if self.rows or not self.groups:
            self._write_group()
        self.writer.close()  # type: ignore[union-attr]


_SEPARATOR = "\x00"  # joins a text column for Arrow to cut (``_arrow_column``); no text of a release holds it


def _arrow_column(values: list[object], kind: pa.DataType) -> pa.Array:
    """A column as Arrow; text joined into one string and cut again in Arrow, twice as fast as encoding each string,
    and without the UTF-8 copy pyarrow's conversion leaves inside every non-ASCII Python string it reads."""
    if not pa.types.is_string(kind):
        return pa.array(values, type=kind)
    try:
        text = _SEPARATOR.join(values)  # type: ignore[arg-type]  # a non-string value raises TypeError
    except TypeError:
        text = None
    if text is not None and values and text.count(_SEPARATOR) == len(values) - 1:
        return pc.split_pattern(pa.array([text], type=kind), _SEPARATOR)[0].values
    return pa.array([v.encode() if isinstance(v, str) else v for v in values], type=pa.binary()).cast(kind)


FORMATS = ("tsv", "jsonl", "parquet")


class SampleFiles(AbstractContextManager):
    """One sample set written chunk by chunk in ``formats``, byte for byte the files of the whole set written at once
    (a TSV or JSONL row does not depend on its neighbours; Parquet rows are buffered into full row groups)."""

    def __init__(self, folder: Path, tsv_name: str, formats: tuple[str, ...] = FORMATS) -> None:
        stem = tsv_name.removesuffix(".tsv")
        self.text = {kind: (folder / f"{stem}.{kind}").open("w", encoding="utf-8", newline="\n")
                     for kind in formats if kind != "parquet"}
        self.parquet = ParquetRowGroups(folder / f"{stem}.parquet") if "parquet" in formats else None
        self.header = True

    def append(self, frame: pd.DataFrame) -> None:
        choices = Choices.of(frame)
        if "tsv" in self.text:
            write_tsv(frame, self.text["tsv"], header=self.header)
        if "jsonl" in self.text:
            write_jsonl(frame, self.text["jsonl"], choices)
        if self.parquet is not None:
            self.parquet.append(frame, choices)
        self.header = False

    def __exit__(self, kind, *_) -> None:
        for handle in self.text.values():
            handle.close()
        if self.parquet is not None and kind is None:
            self.parquet.close()


Record = dict[str, object]


def list_literal(items: object) -> str:
    """``['a', "b'c"]``: Python's own list literal, which is what the released files hold."""
    return repr([str(item) for item in items])  # type: ignore[union-attr]


def render_category_csv(records: list[Record], columns: list[str], list_columns: list[str]) -> str:
    lists = set(list_columns)
    return delimited_text(columns, ([list_literal(record[c]) if c in lists else record[c] for c in columns]
                                    for record in records))


def category_folder(language: str) -> str:
    """Where the per-category CSVs go inside the release, named as upstream (``data_es``)."""
    return f"data_{language}"


def category_file_name(category: str) -> str:
    return f"{category}.full.csv"


def write_category_csvs(records: list[Record], folder: Path, category_field: str, categories: list[str],
                        columns: list[str], list_columns: list[str]) -> list[str]:
    """One file per category that has records, in profile order; returns the file names."""
    names = []
    for category in categories:
        own = [r for r in records if r[category_field] == category]
        if own:
            name = category_file_name(category)
            (folder / name).write_text(render_category_csv(own, columns, list_columns), encoding="utf-8")
            names.append(name)
    return names


def write_records_jsonl(records: list[Record], path: Path) -> None:
    """One JSON object per line, keys in column order, lists as lists, text unescaped."""
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
