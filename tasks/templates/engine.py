"""The expansion engine: a row's *variants* (EsBBQ's flips; KoBBQ's row as written) are filled once per *fill*, each
combination of a pair of people (axis 0) and an item of each lexical slot (axes 1..., last fastest); the format's
label hook makes the samples, de-duplicated (first wins) and numbered per category when asked. Nothing is random."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tasks.templates.load import TemplateRow

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Ref:
    """One slot occurrence in a text: the axis it varies with and the text it takes at each index of that axis."""

    axis: int
    values: tuple[str, ...]


@dataclass(frozen=True)
class CompiledText:
    """A text split at its slots: len(refs) + 1 literal pieces (braces escaped for str.format) around refs."""

    pieces: tuple[str, ...]
    refs: tuple[Ref, ...]

    def pattern(self, fields: list[str]) -> str:
        return "".join(itertools.chain.from_iterable(zip(self.pieces, fields))) + self.pieces[-1]


def escape(piece: str) -> str:
    return piece.replace("{", "{{").replace("}", "}}") if "{" in piece or "}" in piece else piece


class FillGrid:
    """Filling one variant: each text is formatted once per combination of the axes it uses (a text using only W1
    has |W1| values however many fills the row has), then spread, with itertools (C loops): per-row Python
    overhead, not per-sample work, is what limits a release of 570 rows."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.count = math.prod(sizes)

    def table(self, compiled: CompiledText, positions: list[int]) -> list[str]:
        """The text for every combination of ``positions`` (last fastest); the pattern indexes its arguments
        ('{0[1]}': first axis, its second ref), so each tuple from ``product`` formats directly."""
        if not compiled.refs:
            return [compiled.pattern([]).replace("{{", "{").replace("}}", "}")] * math.prod(
                self.sizes[p] for p in positions)
        local = {p: i for i, p in enumerate(positions)}
        values_at: dict[int, list[tuple[str, ...]]] = {p: [] for p in positions}
        fields = []
        for ref in compiled.refs:
            fields.append(f"{{{local[ref.axis]}[{len(values_at[ref.axis])}]}}")
            values_at[ref.axis].append(ref.values)
        pattern = compiled.pattern(fields)
        # An axis this text does not use still varies, with nothing to insert.
        options = [list(zip(*values_at[p])) if values_at[p] else [()] * self.sizes[p] for p in positions]
        return list(itertools.starmap(pattern.format, itertools.product(*options)))

    def spread(self, positions: list[int], table: list[str]) -> list[str]:
        """One value per fill from a table over ``positions``: index = weighted sum of their digits."""
        if len(positions) == len(self.sizes):
            return table
        if not positions:
            return table * self.count
        weights, weight = {}, 1
        for p in reversed(positions):
            weights[p] = weight
            weight *= self.sizes[p]
        steps = [range(0, weights[p] * size, weights[p]) if p in weights else [0] * size
                 for p, size in enumerate(self.sizes)]
        return list(map(table.__getitem__, map(sum, itertools.product(*steps))))

    def text(self, compiled: CompiledText) -> list[str]:
        positions = uses(compiled)
        return self.spread(positions, self.table(compiled, positions))

    def pair_of_fill(self) -> list[int]:
        """The index on axis 0 (the pair of people) of every fill."""
        rest = math.prod(self.sizes[1:])
        return [index for index in range(self.sizes[0]) for _ in range(rest)] if self.sizes else []


def uses(compiled: CompiledText) -> list[int]:
    """The axes a text varies with."""
    return sorted({ref.axis for ref in compiled.refs})


@dataclass
class Variant:
    """One way a row is filled, with what the format's label hook needs to know about the row (``context``)."""

    name: str  # a flip; "" for a row as written
    sizes: list[int]
    texts: dict[str, CompiledText]
    people: list[object] = field(default_factory=list)  # the pair of people at each index of axis 0
    context: object = None


Columns = dict[str, list[object]]
Variants = Callable[[TemplateRow], list[Variant]]
Label = Callable[[TemplateRow, Variant, FillGrid], Columns]


@dataclass
class Engine:
    """A template format's settings."""

    variants: Variants
    label: Label
    columns: list[str]
    dedup_key: Sequence[str] = ()  # empty: keep every sample
    number_column: str | None = None  # the per-category number column, if any


@dataclass
class Expansion:
    """The samples as columns (numpy object arrays), and per template row where its samples start."""

    columns: dict[str, np.ndarray]
    row_keys: list[str]
    row_starts: list[int]
    row_fills: list[int]  # over all its variants
    row_samples: list[int]  # what the row contributes
    row_generated: list[int] | None = None  # made before de-duplication; None when every sample is kept

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0


def object_array(values: list[object]) -> np.ndarray:
    """A numpy object array holding ``values`` as they are (lists stay lists, strings are not copied). numpy is
    imported here, by the expansion: checking a template file, or whether a release is up to date, needs none."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def expand(templates: list[TemplateRow], engine: Engine) -> Expansion:
    """Every row's samples, in row order, de-duplicated and numbered as the engine says."""
    columns: Columns = {name: [] for name in engine.columns}
    starts, fills, kept, generated = [], [], [], []
    dedup = Deduplication(engine)
    for template in templates:
        starts.append(len(columns[engine.columns[0]]))
        row_fills = row_made = row_kept = 0
        dedup.start_row(template.category)
        for variant in engine.variants(template):
            grid = FillGrid(variant.sizes)
            row_fills += grid.count
            if not grid.count:
                continue
            samples = engine.label(template, variant, grid)
            made = len(next(iter(samples.values())))
            row_made += made
            row_kept += dedup.append(samples, made, columns)
        fills.append(row_fills)
        generated.append(row_made)
        kept.append(row_kept)
    return Expansion({name: object_array(values) for name, values in columns.items()}, [t.key for t in templates],
                     starts, fills, kept, generated if engine.dedup_key else None)


class Deduplication:
    """First wins per key within a run of rows of one category; kept samples numbered per such run."""

    def __init__(self, engine: Engine) -> None:
        self.key = list(engine.dedup_key)
        self.number = engine.number_column
        self.category: str | None = None
        self.seen: set[tuple[object, ...]] = set()
        self.count = 0

    def start_row(self, category: str) -> None:
        if category != self.category:
            self.category, self.seen, self.count = category, set(), 0

    def append(self, samples: Columns, made: int, out: Columns) -> int:
        """Add the samples not seen before to ``out`` (numbered when asked); returns how many."""
        if not self.key and not self.number:
            for name, values in out.items():
                values.extend(samples[name])
            return made
        keep = list(range(made))
        if self.key:
            keys = zip(*(samples[name] for name in self.key))
            keep = [i for i, key in enumerate(keys) if key not in self.seen and not self.seen.add(key)]  # type: ignore[func-returns-value]
        for name, values in out.items():
            if name == self.number:
                values.extend(range(self.count, self.count + len(keep)))
            elif len(keep) == made:
                values.extend(samples[name])
            else:
                column = samples[name]
                values.extend(column[i] for i in keep)
        self.count += len(keep)
        return len(keep)
