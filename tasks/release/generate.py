"""Generation from workbook templates (the EsBBQ format): flips, candidate pools, fills, instances.

For every template row, in sheet order: every flip (the profile's list: which texts swap the two
people), every NAME1 candidate, every NAME2 candidate (its pool may depend on NAME1), every
combination of the lexical lists (last fastest); each filled combination gives four instances
(the label hook), and the first instance with a given de-duplication key wins. Nothing is
random, so the output order is the loop order.

The culture is data (``core.profile.WorkbookFormat``): where candidates come from (pools:
queries over the vocabulary, the proper names, the row's own cells), which vocabulary column
holds a gendered or definite form, the ordered text fixes, the output columns. What is not data
is a named hook (``tasks.release.hooks``). The rules are written up in
``../shared/docs/esbbq-generation.md``; section numbers below refer to it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from core.errors import UserError
from core.profile import Condition, Pool, PoolRule, Profile, WorkbookFormat
from tasks.release.expand import Expansion, object_array
from tasks.release.hooks import HOOKS, Filled, Person
from tasks.templates.load import TemplateRow
from tasks.templates.workbook import (PLACEHOLDER, Forms, Row, Vocabulary, forms_by_label, matching_rule,
                                      parse_list)



@dataclass(frozen=True)
class Candidate:
    """One value a person slot can take, with the source row it came from."""

    value: str  # the bare value; what the names cell and the vocabulary are looked up by
    text: str  # the form it takes in text (a Catalan proper name carries its article)
    info: str
    fields: Row = field(default_factory=dict)
    article_forms: dict[str, str] = field(default_factory=dict)


@dataclass
class RowContext:
    """What generation needs to know about one template row (section 4's G, P, T, V)."""

    template: TemplateRow
    fmt: WorkbookFormat
    gender: str  # stated gender, lower-cased, "fake-" dropped
    proper: bool
    targets: list[str]
    words: list[Row]  # the category vocabulary, filtered by the row's subcategory
    vocabulary: Vocabulary
    names: Forms
    lexical: Forms

    def column(self, name: str) -> str:
        return self.template.columns.get(name, "")


def row_context(template: TemplateRow, fmt: WorkbookFormat, vocabulary: Vocabulary) -> RowContext:
    gender = template.columns.get(fmt.gender_column, "").lower()
    if "fake-" in gender:
        gender = gender.split("-", 1)[1]
    subcategory = template.columns.get(fmt.subcategory_column, "")
    words = [w for w in vocabulary.words if w.get("category") == template.category
             and (not subcategory or w.get("subcategory") == subcategory)]
    return RowContext(template, fmt, gender, template.columns.get(fmt.proper_column, "") != "",
                      parse_list(template.columns.get(fmt.targets_column, "")), words, vocabulary,
                      forms_by_label(template.names), forms_by_label(template.lexical))


# --- candidate pools (section 4) ----------------------------------------------------------------

def choose_rule(ctx: RowContext) -> PoolRule:
    rule = matching_rule(ctx.template, ctx.fmt)
    if rule is not None:
        return rule
    raise UserError(f"no candidate pool rule matches category {ctx.template.category!r}"
                    f"{' (proper names)' if ctx.proper else ''}", ctx.template.where())


def _reference(ref: str, ctx: RowContext, first: Candidate | None) -> object:
    if ref.startswith("'") and ref.endswith("'"):
        return ref[1:-1]
    if ref == "targets":
        return ctx.targets
    if ref == "stated_gender":
        return ctx.gender
    if ref.startswith("vocabulary:"):  # every vocabulary word (any category) with column=value
        column, _, value = ref.removeprefix("vocabulary:").partition("=")
        return [w.get(ctx.fmt.word_value, "") for w in ctx.vocabulary.words if w.get(column) == value]
    label, _, name = ref.partition(".")
    if name and first is not None and label == ctx.fmt.people[0]:
        return str(first.fields.get(name, ""))
    raise UserError(f"pool condition refers to {ref!r}, which is not a literal ('x'), targets, stated_gender, "
                    f"vocabulary:COLUMN=VALUE or {ctx.fmt.people[0]}.FIELD", ctx.template.where())


def _holds(condition: Condition, item: Row, ctx: RowContext, first: Candidate | None) -> bool:
    value = item.get(condition.field, "")
    ref = _reference(condition.ref, ctx, first)
    if condition.op == "in":
        return value in ref  # type: ignore[operator]
    if condition.op == "=?":
        return ref == "" or value == ref
    return (value == ref) == (condition.op == "=")


def _source_rows(pool: Pool, ctx: RowContext) -> list[tuple[str, str, Row]]:
    """(value, text form, source row) of every item the pool's source offers, in source order."""
    fmt = ctx.fmt
    if pool.source == "vocabulary":
        return [(str(w.get(fmt.word_value, "")), str(w.get(fmt.word_value, "")), w) for w in ctx.words]
    if pool.source == "proper_names":
        return [(str(p.get(fmt.proper_value, "")), str(p.get(fmt.proper_text, "")), p)
                for p in ctx.vocabulary.proper_names]
    if pool.source == "targets":
        values = ctx.targets
    elif pool.source.startswith("column:"):
        values = parse_list(ctx.column(pool.source.removeprefix("column:")))
    else:
        raise UserError(f"unknown pool source {pool.source!r} (targets, column:NAME, vocabulary, proper_names)",
                        ctx.template.where())
    return [(v, v, {fmt.word_value: v}) for v in values]


def query(pool: Pool, person: str, ctx: RowContext, first: Candidate | None = None) -> list[Candidate]:
    """The pool's candidates for ``person`` in source order; ``first`` is NAME1's, for pair constraints."""
    found, seen = [], set()
    for value, text, item in _source_rows(pool, ctx):
        if not all(_holds(c, item, ctx, first) for c in pool.where):
            continue
        if pool.distinct and value in seen:
            continue
        seen.add(value)
        info = pool.info.format(**item) if pool.info else value
        found.append(Candidate(value, text, _info(ctx, person, info), item, pool.article_forms))
    if not found and pool.otherwise is not None:
        return query(pool.otherwise, person, ctx, first)
    return found


def _info(ctx: RowContext, person: str, default: str) -> str:
    """The row's info column for this person when it has one (section 4.3), else the pool's."""
    column = ctx.fmt.info_columns.get(person, "")
    return ctx.column(column) or default


def candidates(ctx: RowContext) -> Iterator[tuple[Candidate, Candidate]]:
    """(NAME1, NAME2) pairs in loop order; a names cell replaces both pools (section 4.2 step 3)."""
    rule = choose_rule(ctx)
    first_person, second_person = ctx.fmt.people
    if rule.names_cell and ctx.names:
        def from_cell(person: str) -> list[Candidate]:
            return [Candidate(v, v, _info(ctx, person, v), {ctx.fmt.word_value: v})
                    for v in ctx.names.get(person, {}).get("", [])]
        seconds = from_cell(second_person)
        for first in from_cell(first_person):
            for second in seconds:
                yield first, second
        return
    for first in query(rule.people[first_person], first_person, ctx):
        for second in query(rule.people[second_person], second_person, ctx, first):
            yield first, second


def combinations(ctx: RowContext) -> list[dict[str, int]]:
    """Index of every lexical label per combination; the last label varies fastest (section 4.4)."""
    sizes = {label: len(next(iter(forms.values()))) for label, forms in ctx.lexical.items()}
    return [dict(zip(sizes, combo)) for combo in itertools.product(*(range(n) for n in sizes.values()))]


# --- filling (section 5) ------------------------------------------------------------------------

class FillError(ValueError):
    """A placeholder that cannot be filled; the message says which and why."""


def _person_value(spec: str, label: str, candidate: Candidate, ctx: RowContext) -> tuple[str, str]:
    """(text value, display name) of a person placeholder."""
    value = candidate.text
    form_column = ctx.fmt.gender_forms.get(ctx.gender)
    if form_column:
        word = next((w for w in ctx.words if w.get(ctx.fmt.word_value) == candidate.value), None)
        if word is not None and word.get(form_column):
            value = str(word[form_column])
    if spec:
        if candidate.article_forms:
            column = candidate.article_forms.get(ctx.gender, candidate.article_forms.get("", ""))
            value = str(candidate.fields.get(column, ""))
        else:
            forms = ctx.names.get(label, {})
            bare = forms.get("", [])
            if candidate.value not in bare or spec not in forms:
                raise FillError(f"{{{{{label}-{spec}}}}}: {candidate.value!r} has no {spec} form in the names cell")
            value = forms[spec][bare.index(candidate.value)]
        return value, re.sub(ctx.fmt.article_prefix, "", value, count=1)
    return value, candidate.value if candidate.text != candidate.value else value


def fill(texts: list[str], people: dict[str, Candidate], combination: dict[str, int], ctx: RowContext
         ) -> tuple[list[str], dict[str, str]]:
    """The texts with every placeholder replaced, and each person's display name (section 6.1)."""
    display: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        label, _, spec = name.partition("-")
        if label in people:
            text, shown = _person_value(spec, label, people[label], ctx)
            display.setdefault(label, shown)
            return text
        forms = ctx.lexical.get(label)
        if forms is None or spec not in forms:
            raise FillError(f"{{{{{name}}}}} is neither a person nor declared in {ctx.fmt.words_column}")
        return forms[spec][combination[label]]

    return [PLACEHOLDER.sub(value, text).strip() for text in texts], display


def polish(text: str, fmt: WorkbookFormat) -> str:
    """Capitalisation hook, then the language fixes in order (section 5.2-5.3)."""
    text = HOOKS["capitalise"][fmt.hooks.get("capitalise", "none")](text)
    for fix in fmt.fixes:
        text = text.replace(fix.pattern, fix.replace) if fix.literal else re.sub(fix.pattern, fix.replace, text)
    return text


def swap_people(text: str, people: list[str]) -> str:
    first, second = people
    return re.sub(f"{first}|{second}", lambda m: second if m.group(0) == first else first, text)


# --- one row ------------------------------------------------------------------------------------

def row_fields(ctx: RowContext, fmt: WorkbookFormat) -> dict[str, object]:
    """The output fields every instance of the row shares (section 6.5)."""
    columns = ctx.template.columns
    fields: dict[str, object] = {out: ctx.template.template_id if column == fmt.id_column else columns.get(column, "")
                                 for out, column in fmt.row_columns.items()}
    fields.update({out: parse_list(columns.get(column, "")) for out, column in fmt.row_lists.items()})
    fields[fmt.proper_output] = ctx.proper
    return fields


def generate_row(ctx: RowContext) -> Iterator[dict[str, object]]:
    fmt = ctx.fmt
    template = ctx.template
    occurs_hook = HOOKS["occurs"][fmt.hooks["occurs"]]
    label_hook = HOOKS["label"][fmt.hooks["label"]]

    def occurs(name: str, answer: str) -> bool:
        return occurs_hook(name, answer, fmt.match_articles)

    shared = row_fields(ctx, fmt)
    combos = combinations(ctx)
    polished: dict[str, str] = {}  # questions and contexts repeat across candidates and flips

    def polish_once(text: str) -> str:
        if text not in polished:
            polished[text] = polish(text, fmt)
        return polished[text]

    for flip in fmt.flips:
        texts = [swap_people(template.texts[f], fmt.people) if f in flip.swap else template.texts[f]
                 for f in fmt.text_fields]
        for first, second in candidates(ctx):
            for combination in combos:
                try:
                    filled, display = fill(texts, dict(zip(fmt.people, (first, second))), combination, ctx)
                except FillError as exc:
                    raise UserError(str(exc), template.where(fmt.names_column)) from None
                final = [polish_once(text) for text in filled]
                people = [Person(display.get(p, c.value), c.info) for p, c in zip(fmt.people, (first, second))]
                instances = label_hook(Filled(*final, *people), ctx.targets, fmt.unknown, occurs)
                if isinstance(instances, str):
                    raise UserError(f"cannot label ({first.value} / {second.value}, flip {flip.name}): {instances}",
                                    template.where())
                for instance in instances:
                    yield {**shared, fmt.flip_output: flip.name, **instance}


# --- a whole release ----------------------------------------------------------------------------

@dataclass
class Generated:
    """Instances per template row (after de-duplication) and the counts before it."""

    records: list[dict[str, object]]  # every kept instance, in order; ``instance_id`` numbered per category
    row_kept: list[int]  # per template row: instances kept
    row_emitted: list[int]  # per template row: instances before de-duplication


def generate(templates: list[TemplateRow], profile: Profile, vocabulary: Vocabulary) -> Generated:
    """All instances, de-duplicated and numbered per category (section 7)."""
    fmt = profile.templates.workbook
    assert fmt is not None
    records: list[dict[str, object]] = []
    kept_counts, emitted_counts = [], []
    seen: set[tuple[object, ...]] = set()
    category, number = None, 0
    for template in templates:
        if template.category != category:
            category, number, seen = template.category, 0, set()
        kept = emitted = 0
        for instance in generate_row(row_context(template, fmt, vocabulary)):
            emitted += 1
            key = tuple(instance[k] for k in fmt.dedup_key)
            if key in seen:
                continue
            seen.add(key)
            records.append({fmt.number_output: number, **instance})
            number += 1
            kept += 1
        kept_counts.append(kept)
        emitted_counts.append(emitted)
    return Generated(records, kept_counts, emitted_counts)


def expand_workbook(templates: list[TemplateRow], profile: Profile, vocabulary: Vocabulary) -> Expansion:
    """The generated release as columns, in the profile's output columns (one row per kept instance)."""
    fmt = profile.templates.workbook
    assert fmt is not None
    result = generate(templates, profile, vocabulary)
    starts = list(itertools.accumulate(result.row_kept, initial=0))[:-1]
    columns = {name: object_array([record[name] for record in result.records]) for name in fmt.output_columns}
    return Expansion(columns, [t.key for t in templates], starts, result.row_kept, result.row_kept,
                     result.row_emitted)
