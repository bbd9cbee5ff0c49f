"""Workbook templates (the EsBBQ format) in the expansion engine: flips, candidate pools, placeholders.

The culture is data (``core.profile.WorkbookFormat``, ``docs/new-culture.md`` section 3); what is not data is a named
hook (``tasks.templates.hooks``). Section numbers below refer to ``../shared/docs/esbbq-generation.md``."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from core.errors import UserError
from core.profile import Condition, Pool, Profile, WorkbookFormat
from tasks.templates.engine import Columns, CompiledText, Engine, Expansion, FillGrid, Ref, Variant, escape, expand
from tasks.templates.hooks import HOOKS, Filled, Person
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
    polished: dict[str, str] = field(default_factory=dict)  # text -> polished: texts repeat across pairs and flips

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
    values = ctx.targets if pool.source == "targets" else parse_list(ctx.column(pool.source.removeprefix("column:")))
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
    rule = matching_rule(ctx.template, ctx.fmt)
    if rule is None:
        raise UserError(f"no candidate pool rule matches category {ctx.template.category!r}"
                        f"{' (proper names)' if ctx.proper else ''}", ctx.template.where())
    first_person, second_person = ctx.fmt.people
    if rule.names_cell and ctx.names:
        def from_cell(person: str) -> list[Candidate]:
            return [Candidate(v, v, _info(ctx, person, v), {ctx.fmt.word_value: v})
                    for v in ctx.names.get(person, {}).get("", [])]
        yield from itertools.product(from_cell(first_person), from_cell(second_person))
        return
    for first in query(rule.people[first_person], first_person, ctx):
        for second in query(rule.people[second_person], second_person, ctx, first):
            yield first, second


# --- filling (section 5) ------------------------------------------------------------------------

class FillError(ValueError):
    """A placeholder that cannot be filled; the message says which and why."""


def _person_value(spec: str, label: str, candidate: Candidate, ctx: RowContext) -> tuple[str, str]:
    """(text value, display name) of a person placeholder."""
    value = candidate.text
    if form_column := ctx.fmt.gender_forms.get(ctx.gender):
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


def polish(text: str, fmt: WorkbookFormat) -> str:
    """Capitalisation hook, then the language fixes in order (section 5.2-5.3)."""
    text = HOOKS["capitalise"][fmt.hooks.get("capitalise", "none")](text)
    for fix in fmt.fixes:
        text = text.replace(fix.pattern, fix.replace) if fix.literal else re.sub(fix.pattern, fix.replace, text)
    return text


def swap_people(text: str, people: list[str]) -> str:
    first, second = people
    return re.sub(f"{first}|{second}", lambda m: second if m.group(0) == first else first, text)


# --- one row in the engine ---------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """One (NAME1, NAME2) candidate pair and the two people as the label hook sees them (section 6.1)."""

    first: Candidate
    second: Candidate
    people: tuple[Person, Person]


def flip_variants(ctx: RowContext) -> list[Variant]:
    """The row's variants: one per flip (section 3), axis 0 the candidate pairs, then the lexical labels."""
    fmt = ctx.fmt
    pairs = list(candidates(ctx))
    labels = list(ctx.lexical)
    sizes = [len(pairs), *(len(next(iter(ctx.lexical[label].values()))) for label in labels)]
    variants = []
    for flip in fmt.flips:
        texts = [swap_people(ctx.template.texts[f], fmt.people) if f in flip.swap else ctx.template.texts[f]
                 for f in fmt.text_fields]
        if not math.prod(sizes):  # nothing to fill, so nothing to complain about
            variants.append(Variant(flip.name, sizes, {}, [], ctx))
            continue
        try:
            compiled = {f: compile_placeholders(text, pairs, labels, ctx) for f, text in zip(fmt.text_fields, texts)}
            forms = first_forms(texts, fmt.people)
            people = [Pair(first, second, shown_people(forms, first, second, ctx)) for first, second in pairs]
        except FillError as exc:
            raise UserError(str(exc), ctx.template.where(fmt.names_column)) from None
        variants.append(Variant(flip.name, sizes, compiled, people, ctx))
    return variants


def compile_placeholders(text: str, pairs: list[tuple[Candidate, Candidate]], labels: list[str], ctx: RowContext
                         ) -> CompiledText:
    """A text's placeholders as refs: a person's value at each pair, a lexical form on its label's axis."""
    pieces, refs, last = [], [], 0
    for match in PLACEHOLDER.finditer(text):
        pieces.append(escape(text[last:match.start()]))
        last = match.end()
        label, _, spec = match.group(1).partition("-")
        if label in ctx.fmt.people:
            person = ctx.fmt.people.index(label)
            refs.append(Ref(0, tuple(_person_value(spec, label, pair[person], ctx)[0] for pair in pairs)))
            continue
        forms = ctx.lexical.get(label)
        if forms is None or spec not in forms:
            raise FillError(f"{{{{{match.group(1)}}}}} is neither a person nor declared in {ctx.fmt.words_column}")
        refs.append(Ref(1 + labels.index(label), tuple(forms[spec])))
    pieces.append(escape(text[last:]))
    return CompiledText(tuple(pieces), tuple(refs))


def first_forms(texts: list[str], people: list[str]) -> dict[str, str]:
    """Each person's form (``""``, ``def``, ...) in their first placeholder of the texts; absent if none."""
    forms: dict[str, str] = {}
    for text in texts:
        for match in PLACEHOLDER.finditer(text):
            label, _, spec = match.group(1).partition("-")
            if label in people:
                forms.setdefault(label, spec)
    return forms


def shown_people(forms: dict[str, str], first: Candidate, second: Candidate, ctx: RowContext
                 ) -> tuple[Person, Person]:
    """Each person as the answers show them: in the form of their first placeholder, article dropped."""
    people = []
    for label, candidate in zip(ctx.fmt.people, (first, second)):
        shown = _person_value(forms[label], label, candidate, ctx)[1] if label in forms else candidate.value
        people.append(Person(shown, candidate.info))
    return people[0], people[1]


def row_fields(ctx: RowContext, fmt: WorkbookFormat) -> dict[str, object]:
    """The output fields every instance of the row shares (section 6.5)."""
    columns = ctx.template.columns
    fields: dict[str, object] = {out: ctx.template.template_id if column == fmt.id_column else columns.get(column, "")
                                 for out, column in fmt.row_columns.items()}
    fields.update({out: parse_list(columns.get(column, "")) for out, column in fmt.row_lists.items()})
    fields[fmt.proper_output] = ctx.proper
    return fields


def label_instances(template: TemplateRow, variant: Variant, grid: FillGrid, context_separator: str = " ") -> Columns:
    """The four instances of every fill (the profile's label hook), after the texts are polished (section 5)."""
    ctx: RowContext = variant.context  # type: ignore[assignment]
    fmt = ctx.fmt
    occurs_hook = HOOKS["occurs"][fmt.hooks["occurs"]]
    label_hook = HOOKS["label"][fmt.hooks["label"]]

    def occurs(name: str, answer: str) -> bool:
        return occurs_hook(name, answer, fmt.match_articles)

    polished = ctx.polished

    def polish_once(text: str) -> str:
        text = text.strip()
        if text not in polished:
            polished[text] = polish(text, fmt)
        return polished[text]

    filled = [list(map(polish_once, grid.text(variant.texts[f]))) for f in fmt.text_fields]
    shared = {**row_fields(ctx, fmt), fmt.flip_output: variant.name}
    records = []
    for fill, index in enumerate(grid.pair_of_fill()):
        pair: Pair = variant.people[index]  # type: ignore[assignment]
        instances = label_hook(Filled(*(texts[fill] for texts in filled), *pair.people, context_separator),
                               ctx.targets, fmt.unknown, occurs)
        if isinstance(instances, str):
            raise UserError(f"cannot label ({pair.first.value} / {pair.second.value}, flip {variant.name}): "
                            f"{instances}", template.where())
        records.extend({**shared, **instance} for instance in instances)
    return {name: [record[name] for record in records] for name in fmt.output_columns if name != fmt.number_output}


# --- a whole release ----------------------------------------------------------------------------

def expand_workbook(templates: list[TemplateRow], profile: Profile, vocabulary: Vocabulary | None) -> Expansion:
    """The generated release as columns, in the profile's output columns, one row per kept instance (section 7)."""
    fmt = profile.templates.workbook
    if fmt is None or vocabulary is None:
        raise ValueError("workbook templates need a [templates.workbook] profile and their vocabulary")
    separator = profile.templates.context_separator
    return expand(templates, Engine(lambda template: flip_variants(row_context(template, fmt, vocabulary)),
                                    lambda template, variant, grid: label_instances(template, variant, grid, separator),
                                    fmt.output_columns, fmt.dedup_key, fmt.number_output))
