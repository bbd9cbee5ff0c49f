"""Expansion: every template row filled with every combination of its slot fillers, 4 samples a fill.

Fill numbers follow the public release: 1 + the mixed-radix index of the chosen filler
positions over the slot order [N1, N2, lexical slots by name] (last slot fastest). Versions
that swap the two people (b, d) count over [N2, N1, ...] with the person-attached word slots
(X1, X2) swapped too, so fill k of version a and fill k of version b use the same fillers
with the roles swapped.

Each text is compiled once into a ``str.format`` pattern; a fill is then one ``format`` call
per text, which is what makes the full release expand in a fraction of a second.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from core.profile import Profile
from tasks.templates.slots import ParsedText
from tasks.templates.load import TemplateRow

SAMPLE_COLUMNS = ["sample_id", "label_annotation", "context", "question", "choices", "biased_answer", "answer",
                  "bbq_id", "bbq_category", "prediction"]
_LEXICAL_KEY = re.compile(r"([A-Z]+)([0-9]*)")


def lexical_sort_key(name: str) -> tuple[str, int]:
    letters, digits = _LEXICAL_KEY.fullmatch(name).groups()  # type: ignore[union-attr]
    return (letters, int(digits or 0))


def slot_order(template: TemplateRow, profile: Profile) -> list[str]:
    """The slot order whose mixed-radix index is the fill number (see module docstring)."""
    lexical = sorted(template.lexical, key=lexical_sort_key)
    if template.version not in profile.templates.swapped_versions:
        return ["N1", "N2", *lexical]
    first, second = profile.templates.person_word_slots
    if first in template.lexical and second in template.lexical:
        i, j = lexical.index(first), lexical.index(second)
        lexical[i], lexical[j] = lexical[j], lexical[i]
    return ["N2", "N1", *lexical]


@dataclass(frozen=True)
class CompiledText:
    """A text split at its inline slots: literal pieces (braces escaped for str.format) around refs."""

    pieces: tuple[str, ...]  # len(refs) + 1 literal pieces
    refs: tuple[tuple[int, tuple[str, ...]], ...]  # per inline slot: (position in slot order, its items)

    def pattern(self, fields: list[str]) -> str:
        return "".join(itertools.chain.from_iterable(zip(self.pieces, fields))) + self.pieces[-1]


def _escape(piece: str) -> str:
    return piece.replace("{", "{{").replace("}", "}}") if "{" in piece or "}" in piece else piece


def compile_text(parsed: ParsedText, position: dict[str, int]) -> CompiledText:
    return CompiledText(tuple(map(_escape, parsed.pieces)),
                        tuple((position[slot.name], slot.items or ()) for slot in parsed.slots))


def fill_count(template: TemplateRow) -> int:
    return math.prod(len(items) for items in template.slots.values())


@dataclass
class Expansion:
    """The release as columns (numpy object arrays), and where each template row's samples start.

    ``row_samples`` is what each row contributes (4 per fill here; fewer when a generator drops
    duplicates, which it counts in ``row_generated``: samples made before de-duplication).
    """

    columns: dict[str, np.ndarray]
    row_keys: list[str]
    row_starts: list[int]
    row_fills: list[int]
    row_samples: list[int]
    row_generated: list[int] | None = None

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0


# Per-fill columns collected row by row; the four samples of each fill are laid out at the end.
_PER_FILL = ["stem", "label", "amb", "dis", "q_b", "q_c", "ans_b", "ans_c", "stereo_b", "stereo_c", "choices",
             "bbq_id", "bbq_category"]


def expand_templates(templates: list[TemplateRow], profile: Profile) -> Expansion:
    """Every sample of ``templates`` in memory; a release is written from ``row_chunks`` of them instead."""
    fills: dict[str, list[str]] = {name: [] for name in _PER_FILL}
    row_keys, row_starts, row_fills = [], [], []
    total = 0
    for template in templates:
        count = _expand_row(template, profile, fills)
        row_keys.append(template.key)
        row_starts.append(total)
        row_fills.append(count)
        total += 4 * count
    return Expansion(_lay_out_samples(fills, profile.release.unknown_expression), row_keys, row_starts, row_fills,
                     [4 * count for count in row_fills])


def object_array(values: list[object]) -> np.ndarray:
    """A numpy object array holding ``values`` as they are (lists stay lists, strings are not copied)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _lay_out_samples(fills: dict[str, list[str]], unknown: str) -> dict[str, np.ndarray]:
    """Per-fill columns -> per-sample columns, in the order amb-bsd, amb-cnt, dis-bsd, dis-cnt."""
    array = object_array

    def four(*columns: np.ndarray) -> np.ndarray:
        return np.stack(columns, axis=1).ravel()

    f = {name: array(values) for name, values in fills.items()}
    count = len(f["stem"])
    unknowns = np.full(count, unknown, dtype=object)
    stems = f["stem"]
    return {
        "sample_id": four(stems + "amb-bsd", stems + "amb-cnt", stems + "dis-bsd", stems + "dis-cnt"),
        "label_annotation": np.repeat(f["label"], 4),
        "context": four(f["amb"], f["amb"], f["dis"], f["dis"]),
        "question": four(f["q_b"], f["q_c"], f["q_b"], f["q_c"]),
        "choices": np.repeat(f["choices"], 4),
        "biased_answer": four(f["stereo_b"], f["stereo_c"], f["stereo_b"], f["stereo_c"]),
        "answer": four(unknowns, unknowns, f["ans_b"], f["ans_c"]),
        "bbq_id": np.repeat(f["bbq_id"], 4),
        "bbq_category": np.repeat(f["bbq_category"], 4),
        "prediction": np.full(4 * count, "", dtype=object),
    }


class _FillGrid:
    """Filling one row: each text is formatted once per combination of the slots it uses, then spread.

    A text that uses only N1 has |N1| distinct values however many fills the row has. Tables are
    built and spread with itertools (C loops), because per-row Python overhead, not per-sample
    work, is what limits a release of 570 rows.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.count = math.prod(sizes)

    def table(self, compiled: CompiledText, positions: list[int]) -> list[str]:
        """The text for every combination of ``positions`` (last fastest).

        The pattern is rewritten to index its arguments ('{0[1]}': first slot, its second inline
        list), so each combination of per-slot item tuples from ``product`` formats directly.
        """
        if not compiled.refs:
            return [compiled.pattern([]).replace("{{", "{").replace("}}", "}")] * math.prod(
                self.sizes[p] for p in positions)
        local = {p: i for i, p in enumerate(positions)}
        lists_at: dict[int, list[tuple[str, ...]]] = {p: [] for p in positions}
        fields = []
        for p, items in compiled.refs:
            fields.append(f"{{{local[p]}[{len(lists_at[p])}]}}")
            lists_at[p].append(items)
        pattern = compiled.pattern(fields)
        # A position this text does not use still varies, with nothing to insert.
        options = [list(zip(*lists_at[p])) if lists_at[p] else [()] * self.sizes[p] for p in positions]
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
        positions = sorted({p for p, _ in compiled.refs})
        return self.spread(positions, self.table(compiled, positions))


_FILL_NUMBERS = [f"{n:03d}-" for n in range(1, 1001)]


def _expand_row(template: TemplateRow, profile: Profile, out: dict[str, list[str]]) -> int:
    order = slot_order(template, profile)
    grid = _FillGrid([len(template.slots[name]) for name in order])
    count = grid.count
    position = {name: index for index, name in enumerate(order)}
    texts = {field: compile_text(parsed, position) for field, parsed in template.parsed.items()}
    amb = grid.text(texts["ambiguous_context"])
    dis = list(map(" ".join, zip(amb, grid.text(texts["disambiguating_context"]))))
    # Both answers (and so the choices) are tabled over the slots either of them uses.
    answers = texts["biased_answer"], texts["counter_biased_answer"]
    both = sorted({p for text in answers for p, _ in text.refs})
    table_b, table_c = grid.table(answers[0], both), grid.table(answers[1], both)
    unknown = profile.release.unknown_expression
    choices = [repr([b, c, unknown]) for b, c in zip(table_b, table_c)]
    ans_b, ans_c = grid.spread(both, table_b), grid.spread(both, table_c)
    # The stereotype-conforming person: the target for a biased question, the other person for a
    # counter-biased one. In counter-biased versions the row's own answers point the other way.
    counter_context = template.version in profile.templates.counter_biased_versions
    category = profile.category(template.category)
    prefix = f"{category.sample_prefix if category else template.category.lower()}-" \
             f"{template.template_id:03d}{template.version}-"
    numbers = _FILL_NUMBERS[:count] if count <= len(_FILL_NUMBERS) else [f"{n:03d}-" for n in range(1, count + 1)]
    out["stem"] += [prefix + number for number in numbers]
    out["label"] += [template.label] * count
    out["amb"] += amb
    out["dis"] += dis
    out["q_b"] += grid.text(texts["biased_question"])
    out["q_c"] += grid.text(texts["counter_biased_question"])
    out["ans_b"] += ans_b
    out["ans_c"] += ans_c
    out["stereo_b"] += ans_c if counter_context else ans_b
    out["stereo_c"] += ans_b if counter_context else ans_c
    out["choices"] += grid.spread(both, choices)
    out["bbq_id"] += [template.bbq_id] * count
    out["bbq_category"] += [template.bbq_category] * count
    return count


# Samples expanded at a time when a release is written: memory is bounded by a chunk, not by the release.
CHUNK_SAMPLES = 16_384


def row_chunks(templates: list[TemplateRow], limit: int = CHUNK_SAMPLES) -> Iterator[range]:
    """Consecutive template rows (as index ranges) whose samples stay within ``limit``; a row larger than
    ``limit`` is a chunk of its own. Expanding each chunk with ``expand_templates`` and concatenating gives
    the whole expansion, since a row's samples depend on that row alone."""
    start, samples = 0, 0
    for index, template in enumerate(templates):
        count = 4 * fill_count(template)
        if samples and samples + count > limit:
            yield range(start, index)
            start, samples = index, 0
        samples += count
    if start < len(templates) or not templates:  # an empty release is one empty chunk
        yield range(start, len(templates))


def evaluation_fills(templates: list[TemplateRow], fills: list[int], profile: Profile, seed: int) -> list[int]:
    """One fill number per template row, drawn per version pair so that a and b share it.

    Each pair draws from its own generator seeded by (seed, category, ID, pair), so adding or
    editing one template never changes the draw of another.
    """
    pair_of = {}
    for first, second in zip(profile.templates.counter_biased_versions, profile.templates.swapped_versions):
        pair_of[first] = pair_of[second] = first + second
    chosen: dict[tuple[str, int, str, int], int] = {}
    result = []
    for template, count in zip(templates, fills):
        pair = pair_of.get(template.version, template.version)
        key = (template.category, template.template_id, pair, count)
        if key not in chosen:
            rng = random.Random(f"{seed}|{template.category}|{template.template_id}|{pair}|{count}")
            chosen[key] = rng.randrange(count) + 1
        result.append(chosen[key])
    return result


def evaluation_indices(row_starts: list[int], chosen_fills: list[int]) -> list[int]:
    """The test split's positions: the four samples of each row's chosen fill."""
    indices = []
    for start, fill in zip(row_starts, chosen_fills):
        first = start + 4 * (fill - 1)
        indices.extend(range(first, first + 4))
    return indices
