"""KoBBQ's template format in the expansion engine: rows as written, four samples a fill.

Fill numbers follow the public release: 1 + the mixed-radix index over [N1, N2, lexical slots by name], last fastest;
swapped versions (b, d) count over [N2, N1, ...] with X1/X2 swapped, so fill k of a and of b share fillers."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterator

from core.profile import Profile
from tasks.templates.engine import (Columns, CompiledText, Engine, Expansion, FillGrid, Ref, Variant, escape,
                                  expand, uses)
from tasks.templates.sample_ids import QUESTION_SUFFIXES, fill_number, row_prefix
from tasks.templates.load import TemplateRow
from tasks.templates.slots import PERSON_SLOTS, ParsedText

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


def fill_count(template: TemplateRow) -> int:
    return math.prod(len(items) for items in template.slots.values())


def expand_templates(templates: list[TemplateRow], profile: Profile) -> Expansion:
    """Every sample of ``templates`` in memory (a release is written from ``row_chunks`` of them instead): the engine
    fills a row as written (its versions are explicit rows), four samples a fill, nothing de-duplicated."""
    return expand(templates, Engine(lambda template: [row_variant(template, profile)],
                                    lambda template, variant, grid: paired_questions(template, variant, grid, profile),
                                    SAMPLE_COLUMNS))


def row_variant(template: TemplateRow, profile: Profile) -> Variant:
    """The row as written: axis 0 is the pair of people (N1 index, N2 index) in the order of ``slot_order``, the
    other axes its lexical slots in that order; each inline list becomes a ref on its slot's axis."""
    order = slot_order(template, profile)
    sizes = {name: len(template.slots[name]) for name in order}
    if order[0] == "N1":
        pairs = [(i, j) for i in range(sizes["N1"]) for j in range(sizes["N2"])]
    else:
        pairs = [(i, j) for j in range(sizes["N2"]) for i in range(sizes["N1"])]
    axis = {name: index for index, name in enumerate(order[2:], start=1)}
    people = [pair[0] for pair in pairs], [pair[1] for pair in pairs]  # each person's item at each pair
    texts = {name: compile_inline(parsed, people, axis) for name, parsed in template.parsed.items()}
    return Variant("", [len(pairs), *(sizes[name] for name in order[2:])], texts, pairs)


def compile_inline(parsed: ParsedText, people: tuple[list[int], list[int]], axis: dict[str, int]) -> CompiledText:
    """Each inline list as a ref: a person's list indexed by the pair, a lexical list on its own axis."""
    refs = []
    for slot in parsed.slots:
        items = slot.items or ()
        if slot.name in PERSON_SLOTS:
            refs.append(Ref(0, tuple(map(items.__getitem__, people[PERSON_SLOTS.index(slot.name)]))))
        else:
            refs.append(Ref(axis[slot.name], items))
    return CompiledText(tuple(map(escape, parsed.pieces)), tuple(refs))


_FILL_NUMBERS = [fill_number(n) + "-" for n in range(1, 1001)]


def _four(*columns: list[object]) -> list[object]:
    """Per-fill columns -> per-sample values, one from each column in turn (amb-bsd, amb-cnt, dis-bsd, dis-cnt)."""
    return list(itertools.chain.from_iterable(zip(*columns)))


def paired_questions(template: TemplateRow, variant: Variant, grid: FillGrid, profile: Profile) -> Columns:
    """KoBBQ's label hook: each fill gives four samples, both contexts x the biased and the counter-biased question. The
    stereotype-conforming person is the target for a biased question, the other person for a counter-biased one; in
    counter-biased versions the row's own answers point the other way."""
    texts = variant.texts
    count = grid.count
    amb = grid.text(texts["ambiguous_context"])
    dis = list(map(profile.templates.context_separator.join, zip(amb, grid.text(texts["disambiguating_context"]))))
    # Both answers (and so the choices) are tabled over the axes either of them uses.
    answers = texts["biased_answer"], texts["counter_biased_answer"]
    both = sorted({*uses(answers[0]), *uses(answers[1])})
    table_b, table_c = grid.table(answers[0], both), grid.table(answers[1], both)
    unknown = profile.release.unknown_expression
    choices = grid.spread(both, [repr([b, c, unknown]) for b, c in zip(table_b, table_c)])
    ans_b, ans_c = grid.spread(both, table_b), grid.spread(both, table_c)
    counter_context = template.version in profile.templates.counter_biased_versions
    stereo_b, stereo_c = (ans_c, ans_b) if counter_context else (ans_b, ans_c)
    q_b, q_c = grid.text(texts["biased_question"]), grid.text(texts["counter_biased_question"])
    prefix = row_prefix(template, profile) + "-"
    numbers = _FILL_NUMBERS[:count] if count <= len(_FILL_NUMBERS) else [fill_number(n) + "-"
                                                                          for n in range(1, count + 1)]
    stems = [prefix + number for number in numbers]
    unknowns = [unknown] * count
    return {
        "sample_id": _four(*([stem + suffix for stem in stems] for suffix in QUESTION_SUFFIXES)),
        "label_annotation": [template.label] * (4 * count),
        "context": _four(amb, amb, dis, dis),
        "question": _four(q_b, q_c, q_b, q_c),
        "choices": _four(choices, choices, choices, choices),
        "biased_answer": _four(stereo_b, stereo_c, stereo_b, stereo_c),
        "answer": _four(unknowns, unknowns, ans_b, ans_c),
        "bbq_id": [template.bbq_id] * (4 * count),
        "bbq_category": [template.bbq_category] * (4 * count),
        "prediction": [""] * (4 * count),
    }


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
    """One fill number per template row, drawn per version pair (a and b share it) from a generator seeded by (seed,
    category, ID, pair), so adding or editing one template never changes the draw of another."""
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
