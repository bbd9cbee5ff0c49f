"""A release written as one ``<Category>.full.csv`` per category (EsBBQ's layout).

Minimal quoting (a field is quoted only when it holds a comma, a quote or a line break), ``\\n``
line ends, integers in decimal, booleans as ``True``/``False``, and list-valued fields as Python
list literals (``['abuelo', 'old']``; an item holding ``'`` is double-quoted): exactly the bytes
of the upstream files, so a rebuild can be compared with them with ``cmp``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

Record = dict[str, object]


def list_literal(items: object) -> str:
    """``['a', "b'c"]``: Python's own list literal, which is what the released files hold."""
    return repr([str(item) for item in items])  # type: ignore[union-attr]


def render_category_csv(records: list[Record], columns: list[str], list_columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    lists = set(list_columns)
    writer.writerows([list_literal(record[c]) if c in lists else record[c] for c in columns] for record in records)
    return buffer.getvalue()


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
