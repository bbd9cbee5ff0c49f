"""Machine pre-translation of BBQ template rows into drafts for the post-editor, and its cost before any call: each
text field and filler is one segment, protected, looked up in the cache; only the misses go to DeepL, each batch
cached as answered. The dry run counts the same segments with the same cache keys, as DeepL bills them."""

from __future__ import annotations

import contextlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, unescape

from core.decisions import Decision
from core.errors import Location, UserError
from core.findings import Finding
from core.profile import Profile
from core.tables import read_records
from tasks.templates.bbq import BBQTemplate
from tasks.translation.cache import CachedTranslation, RequestSettings, TranslationCache
from tasks.translation.deepl_client import KEY_VARIABLE, TranslationStopped, Translator
from tasks.translation.glossary import EMPTY_GLOSSARY, Glossary, term_pattern

# --- placeholders: sent as plain text, DeepL may translate, inflect or drop BBQ's {{NAME1}}; as self-closing XML tags
# (tag_handling="xml") it moves them as units. Glossary terms DeepL cannot apply itself are protected the same way. A
# translation that lost or duplicated a tag is flagged, never accepted silently.

# BBQ's placeholder, tolerant of the stray third brace BBQ has once ({{{NAME2}}).
BBQ_PLACEHOLDER = re.compile(r"\{\{\{?([A-Z]+)([0-9]*)\}\}\}?")
PLACEHOLDER_TAG = "ph"  # <ph n="NAME1"/>
TERM_TAG = "term"  # <term n="0"/>: a glossary term applied after translation
# DeepL may return a self-closing tag as an empty element pair; both count.
_TAG = re.compile(r'<(ph|term)\s+n="([^"]*)"\s*(?:/>|>\s*</\1>)')
# BBQ slot kind -> the KoBBQ slot letter ({{NAME1}} -> [N1], {{WORD1}} -> [W1]); others keep their name.
KOBBQ_SLOT_LETTER = {"NAME": "N", "WORD": "W"}


@dataclass(frozen=True)
class SlotStyle:
    """How a target format writes BBQ's slots: KoBBQ's TSV ``[N1]`` declared as ``N1: [...]``; a workbook format (EsBBQ)
    keeps BBQ's ``{{NAME1}}`` declared as ``NAME1: [...]``."""

    short_names: bool  # NAME1 -> N1, WORD1 -> W1 (KoBBQ)
    opening: str
    closing: str

    def name(self, kind: str, number: str) -> str:
        return f"{KOBBQ_SLOT_LETTER.get(kind, kind) if self.short_names else kind}{number}"

    def inline(self, kind: str, number: str) -> str:
        return f"{self.opening}{self.name(kind, number)}{self.closing}"

    def source_text(self, text: str) -> str:
        """English BBQ text in this style, for reading beside the draft: ``{{NAME1}}`` -> ``[N1]``."""
        return BBQ_PLACEHOLDER.sub(lambda m: self.inline(m.group(1), m.group(2)), text)


KOBBQ_SLOTS = SlotStyle(True, "[", "]")
BBQ_SLOTS = SlotStyle(False, "{{", "}}")


@dataclass(frozen=True)
class Protected:
    """A segment as sent to DeepL, with what it must get back."""

    source: str  # the English text as written in BBQ
    sent: str  # XML-escaped text with placeholders (and post-translation terms) as tags
    placeholders: tuple[str, ...]  # BBQ placeholder names in order, e.g. ("NAME1", "NAME2")
    terms: tuple[str, ...]  # glossary source terms protected as tags, by tag number


def protect(source: str, protected_terms: tuple[str, ...] = ()) -> Protected:
    """Turn ``{{NAME1}}`` into ``<ph n="NAME1"/>`` and each given glossary term into ``<term n="i"/>``."""
    names: list[str] = []
    found_terms: list[str] = []
    # Escape first: the text must be well-formed XML once tags are inserted.
    text = escape(source)

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1) + match.group(2)
        names.append(name)
        return f'<{PLACEHOLDER_TAG} n="{name}"/>'

    text = BBQ_PLACEHOLDER.sub(placeholder, text)
    for term in protected_terms:
        pattern = term_pattern(escape(term))
        if pattern.search(text):
            index = len(found_terms)
            found_terms.append(term)
            text = pattern.sub(f'<{TERM_TAG} n="{index}"/>', text)
    return Protected(source, text, tuple(names), tuple(found_terms))


@dataclass(frozen=True)
class Restored:
    text: str  # target-language text with KoBBQ bare slots ([N1]) and substituted terms
    missing: tuple[str, ...]  # placeholders the translation lost
    extra: tuple[str, ...]  # placeholders the translation invented or duplicated


def restore(protected: Protected, translated: str, term_targets: dict[str, str],
            style: SlotStyle = KOBBQ_SLOTS) -> Restored:
    """Tags back to the target format's slots (``<ph n="NAME1"/>`` -> ``[N1]``), terms to ``term_targets``."""
    seen: list[str] = []

    def back(match: re.Match[str]) -> str:
        kind, value = match.groups()
        if kind == TERM_TAG:
            index = int(value) if value.isdigit() else -1
            if 0 <= index < len(protected.terms):
                return term_targets[protected.terms[index]]
            seen.append(f"term {value}")
            return ""
        seen.append(value)
        slot = BBQ_PLACEHOLDER.fullmatch("{{" + value + "}}")
        return style.inline(slot.group(1), slot.group(2)) if slot else f"{style.opening}{value}{style.closing}"

    text = unescape(_TAG.sub(back, translated))
    missing, extra = placeholder_difference(protected.placeholders, tuple(seen))
    return Restored(text, missing, extra)


_ANY_TAG = re.compile(r"<[^>]*>")


def billable_characters(sent: str) -> int:
    """What DeepL bills for one text sent with ``tag_handling="xml"``: the characters outside the tags, an entity
    (``&amp;``) being the one character it stands for (DeepL's "Usage count and billing": "the characters of the HTML or
    XML tags (including all their attributes and values) are not counted")."""
    return len(unescape(_ANY_TAG.sub("", sent)))


def placeholder_difference(expected: tuple[str, ...], got: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What was lost and what was added, counting repeats: a sentence that names {{NAME1}} twice needs it twice."""
    want, have = Counter(expected), Counter(got)
    return tuple(sorted((want - have).elements())), tuple(sorted((have - want).elements()))


STAGE = "pretranslate"
# KoBBQ column -> where its English text is in a BBQ row. Names/Lexical_diversity are lists.
TEXT_FIELDS = {
    "Stereotype": lambda t: t.relevant_social_values,
    "Ambiguous_context": lambda t: t.texts["ambiguous_context"],
    "Disambiguating_context": lambda t: t.texts["disambiguating_context"],
    "Biased_question": lambda t: t.texts["negative_question"],
    "Counter-biased_question": lambda t: t.texts["non_negative_question"],
    "Biased_question_answer": lambda t: t.texts["negative_answer"],
    "Counter-biased_question_answer": lambda t: t.texts["non_negative_answer"],
}
LIST_FIELDS = {"Names": lambda t: t.names, "Lexical_diversity": lambda t: t.lexical}
FIELD_ORDER = [*TEXT_FIELDS, *LIST_FIELDS]
# BBQ declarations: "NAME1: [a, b]; NAME2: [c]", also "{{NAME1}}: [...]" and ";" inside a list.
_BBQ_DECLARATION = re.compile(r"\{*([A-Z]+)([0-9]*)\}*\s*:\s*\[([^\]]*)\]")


def bbq_declarations(cell: str, style: SlotStyle = KOBBQ_SLOTS) -> list[tuple[str, list[str]]]:
    """``NAME1: [a, b]; NAME2: [c]`` -> ``[("N1", ["a", "b"]), ("N2", ["c"])]`` (slot names of ``style``). BBQ writes
    lists with commas, once with semicolons (``[deaf person; hard-of-hearing person]``)."""
    return [(style.name(kind, number), [i.strip() for i in re.split(r"[;,]", body) if i.strip()])
            for kind, number, body in _BBQ_DECLARATION.findall(cell)]


def require_target_language(translator: Translator, target: str, profile: Profile) -> None:
    """One clear error, before anything is sent, when DeepL does not translate into the profile's language."""
    if not translator.target_supported(target):
        raise UserError(f"DeepL does not offer {target} as a target language (its /v2/languages list), so profile "
                        f"{profile.name!r} cannot be pre-translated with DeepL; translate the templates by other means "
                        "and import them as the post-edit, or set [translation] deepl_target_lang to a language DeepL "
                        "offers", str(profile.path or profile.name))


@dataclass(frozen=True)
class DraftField:
    column: str  # KoBBQ column
    english: str  # the English source, with KoBBQ bare slots ([N1]) for reading
    draft: str | None  # None when the run stopped before this field was translated
    flags: tuple[str, ...] = ()  # codes of the findings on this field


@dataclass(frozen=True)
class Draft:
    """The DeepL draft of one BBQ template row."""

    template: BBQTemplate
    fields: tuple[DraftField, ...]

    def field(self, column: str) -> DraftField:
        return next(f for f in self.fields if f.column == column)


@dataclass(frozen=True)
class Substitution:
    subject: str
    column: str
    source: str
    target: str


@dataclass(frozen=True)
class PretranslationResult:
    drafts: list[Draft]
    decisions: list[Decision]
    chars_billed: int  # characters DeepL billed in this run
    chars_from_cache: int  # characters of segments answered by the cache (not paid again)
    flagged: list[Finding]
    segments: int  # distinct segments needed
    segments_left: int  # distinct segments still untranslated (a stop happened)
    stopped: str | None  # why the run stopped early, None when complete
    glossary_mode: str
    substitutions: list[Substitution] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.segments_left == 0


def request_settings(profile: Profile, glossary: Glossary, mode: str) -> RequestSettings:
    """The cache key's non-text part: languages, glossary fingerprint, and every option sent."""
    t = profile.translation
    options = (("formality", t.formality), ("glossary_mode", mode), ("tag_handling", "xml"))
    return RequestSettings(profile.source_language.upper(), t.target_lang(profile.language),
                           glossary.fingerprint if mode != "none" else "", options)


def segment_sources(template: BBQTemplate) -> dict[str, list[str]]:
    """The English segments of one row, per KoBBQ column (list fields: one segment per filler)."""
    out = {column: [getter(template)] for column, getter in TEXT_FIELDS.items()}
    for column, getter in LIST_FIELDS.items():
        out[column] = [item for _, items in bbq_declarations(getter(template)) for item in items]
    return out


def protect_all(templates: list[BBQTemplate], glossary: Glossary, mode: str) -> dict[str, Protected]:
    """Every distinct English segment, protected as it will be sent ("after" mode also protects terms)."""
    terms = tuple(e.source for e in sorted(glossary.entries, key=lambda e: -len(e.source))) if mode == "after" else ()
    protected: dict[str, Protected] = {}
    for template in templates:
        for texts in segment_sources(template).values():
            for text in texts:
                if text and text not in protected:
                    protected[text] = protect(text, terms)
    return protected


@dataclass(frozen=True)
class ModeChoice:
    """How the glossary is applied, and why: what a run records (the cache too: ``TranslationCache.record_mode``)."""

    mode: str  # deepl | after | none
    reason: str
    asked_deepl: bool = False  # the choice came from DeepL's glossary pairs just now (a live run records it)


def choose_mode(profile: Profile, glossary: Glossary, translator: Translator | None,
                recorded: tuple[str, str] | None = None) -> ModeChoice:
    """DeepL's own glossary where the pair supports it, else substitution after translation. ``"auto"`` takes the mode
    the cache recorded (the texts sent differ between modes: a replay or dry run must send what the paid run did), else
    a live DeepL's glossary pairs, else DeepL's own glossary (it has one for every pair it translates)."""
    if not glossary.entries:
        return ModeChoice("none", "the profile's glossary has no entries")
    wanted = profile.translation.glossary_mode
    if wanted in ("deepl", "after"):
        return ModeChoice(wanted, f"the profile sets [translation] glossary_mode = {wanted!r}")
    if recorded is not None:
        return ModeChoice(recorded[0], f"recorded with the translation cache: {recorded[1]}")
    source, target = profile.source_language, profile.translation.target_lang(profile.language)
    if translator is None or not translator.sends:
        return ModeChoice("deepl", "nothing recorded in the translation cache, and no DeepL to ask: DeepL's own "
                                   "glossary is assumed (DeepL supports glossaries for the languages it translates)")
    if translator.glossary_supported(source, target):
        return ModeChoice("deepl", f"DeepL lists {source.lower()}->{target.lower()} among its glossary language pairs",
                          asked_deepl=True)
    return ModeChoice("after", f"DeepL does not list {source.lower()}->{target.lower()} among its glossary language "
                               "pairs: terms are protected and substituted after translation", asked_deepl=True)


def recorded_mode(cache: TranslationCache, profile: Profile, glossary: Glossary) -> tuple[str, str] | None:
    """The cache's record of how this profile's glossary was applied (None: nothing recorded)."""
    if not glossary.entries:
        return None
    source, target = profile.source_language, profile.translation.target_lang(profile.language)
    return cache.recorded_mode(source, target, glossary.fingerprint)


def pretranslate(templates: list[BBQTemplate], translator: Translator, cache_path, profile: Profile,
                 glossary: Glossary) -> PretranslationResult:
    """Draft every row; pay only for segments not in the cache; stop cleanly on quota or key errors."""
    billed, stopped = 0, None
    with TranslationCache(cache_path) as cache:
        recorded = recorded_mode(cache, profile, glossary)
        try:
            choice = choose_mode(profile, glossary, translator, recorded)
        except TranslationStopped as exc:  # the cache can still answer; nothing new can be sent
            stopped, choice = str(exc), choose_mode(profile, glossary, None, recorded)
        mode = choice.mode
        settings = request_settings(profile, glossary, mode)
        if choice.asked_deepl:
            cache.record_mode(settings.source_lang, settings.target_lang, glossary.fingerprint, mode, choice.reason)
        protected = protect_all(templates, glossary, mode)
        sents = list(dict.fromkeys(p.sent for p in protected.values()))
        answers = cache.get_many(sents, settings)
        from_cache = sum(billable_characters(s) for s in answers)
        missing = [s for s in sents if s not in answers]
        if missing and stopped is None and not translator.sends:
            stopped = (f"{len(missing)} of {len(sents)} segment(s) are not in the recorded translation cache "
                       f"{Path(cache_path)} (glossary mode {mode!r}: {choice.reason}); a replay sends nothing to "
                       f"DeepL, so running it again cannot translate them: set {KEY_VARIABLE} to pay for them")
        glossary_id = None
        if missing and stopped is None:
            try:
                require_target_language(translator, settings.target_lang, profile)
                if mode == "deepl":
                    glossary_id = translator.create_glossary(glossary, settings.source_lang, settings.target_lang)
            except TranslationStopped as exc:
                stopped = str(exc)
        size = profile.translation.batch_size
        for start in range(0, len(missing) if stopped is None else 0, size):
            batch = missing[start:start + size]
            try:
                results = translator.translate(batch, settings, glossary_id)
            except TranslationStopped as exc:
                stopped = str(exc)
                break
            done = dict(zip(batch, results))
            cache.put_many(done, settings)
            answers.update(done)
            billed += sum(r.billed_characters for r in results)
    left = sum(1 for s in sents if s not in answers)
    if stopped and translator.sends:
        stopped = f"{stopped}; {len(sents) - left} of {len(sents)} segments are translated and cached, {left} left"
    # The target format's slots: a workbook format keeps BBQ's {{NAME1}}, KoBBQ's TSV writes [N1].
    style = BBQ_SLOTS if profile.templates.workbook is not None else KOBBQ_SLOTS
    drafts, flagged, substitutions = build_drafts(templates, protected, answers, glossary, mode, style)
    decisions = draft_decisions(drafts, substitutions, protected, choice, glossary)
    return PretranslationResult(drafts, decisions, billed, from_cache, flagged, len(sents), left, stopped, mode,
                                substitutions)


def build_drafts(templates: list[BBQTemplate], protected: dict[str, Protected],
                 answers: dict[str, CachedTranslation], glossary: Glossary, mode: str, style: SlotStyle = KOBBQ_SLOTS
                 ) -> tuple[list[Draft], list[Finding], list[Substitution]]:
    drafts, flagged, substitutions = [], [], []
    targets = glossary.targets
    for template in templates:
        fields = []
        for column in FIELD_ORDER:
            codes: list[str] = []

            def flag(severity: str, code: str, message: str) -> None:
                codes.append(code)
                flagged.append(Finding(severity, Location(template.source, template.row, column), code, message))

            def one(text: str) -> str | None:
                if not text:
                    return ""
                p = protected[text]
                answer = answers.get(p.sent)
                if answer is None:
                    return None
                restored = restore(p, answer.translated, targets, style)
                if restored.missing:
                    flag("error", "placeholder-lost", f"the translation lost {', '.join(restored.missing)}: "
                                                      f"{restored.text!r}")
                if restored.extra:
                    flag("error", "placeholder-extra", f"the translation has extra {', '.join(restored.extra)}: "
                                                       f"{restored.text!r}")
                for entry in glossary.terms_in(text):
                    if mode == "deepl" and entry.target not in restored.text:
                        flag("warning", "glossary-not-applied",
                             f"glossary term {entry.source!r} -> {entry.target!r} is not in the draft {restored.text!r}")
                    else:
                        substitutions.append(Substitution(template.subject, column, entry.source, entry.target))
                return restored.text

            if column in LIST_FIELDS:
                declared = bbq_declarations(LIST_FIELDS[column](template), style)
                if column == "Names" and not declared:
                    flag("warning", "names-from-vocabulary", "BBQ gives no Names for this row (its fillers come from "
                                                             "BBQ's vocabulary); the post-editor writes the fillers")
                parts = [(slot, [one(i) for i in items]) for slot, items in declared]
                english = "; ".join(f"{slot}: [{', '.join(items)}]" for slot, items in declared)
                draft = (None if any(i is None for _, items in parts for i in items)
                         else "; ".join(f"{slot}: [{', '.join(items)}]" for slot, items in parts))
            else:
                source = TEXT_FIELDS[column](template)
                english, draft = style.source_text(source), one(source)
            if draft is None:
                flag("warning", "not-translated", "not translated yet (the run stopped first)")
            fields.append(DraftField(column, english, draft, tuple(codes)))
        drafts.append(Draft(template, tuple(fields)))
    return drafts, flagged, substitutions


def draft_decisions(drafts: list[Draft], substitutions: list[Substitution], protected: dict[str, Protected],
                    choice: ModeChoice, glossary: Glossary = EMPTY_GLOSSARY) -> list[Decision]:
    """One decision per BBQ template, one per template's glossary substitutions, and the glossary's mode (if any)."""
    mode = choice.mode
    by_subject: dict[str, list[Draft]] = defaultdict(list)
    for draft in drafts:
        by_subject[draft.template.subject].append(draft)
    decisions = []
    for subject, rows in sorted(by_subject.items()):
        fields = [f for d in rows for f in d.fields]
        lost = sorted({c for f in fields for c in f.flags if c.startswith("placeholder")})
        untranslated = sum(1 for f in fields if f.draft is None)
        outcome = "incomplete" if untranslated else ("flagged" if lost else "drafted")
        sources = [t for d in rows for texts in segment_sources(d.template).values() for t in texts if t]
        chars = sum(billable_characters(protected[t].sent) for t in dict.fromkeys(sources))
        reason = {"drafted": f"DeepL drafted all {len(fields)} fields of {len(rows)} row(s) with every placeholder intact",
                  "flagged": f"DeepL drafted {len(fields)} fields of {len(rows)} row(s) but a placeholder was lost or "
                             f"added ({', '.join(lost)}); the post-editor must restore it",
                  "incomplete": f"{untranslated} of {len(fields)} fields of {len(rows)} row(s) are not translated yet"
                  }[outcome]
        template = rows[0].template
        decisions.append(Decision(STAGE, "bbq_template", subject, "deepl-pretranslation", outcome, reason,
                                  {"rows": len(rows), "fields": len(fields), "untranslated": untranslated,
                                   "characters": chars, "flags": lost}, source=template.source))
    subs: dict[str, list[Substitution]] = defaultdict(list)
    for s in substitutions:
        subs[s.subject].append(s)
    for subject, items in sorted(subs.items()):
        pairs = sorted({(s.source, s.target) for s in items})
        text = "; ".join(f"{a} -> {b}" for a, b in pairs)
        decisions.append(Decision(STAGE, "bbq_template", subject, "glossary-substitution", text,
                                  f"{len(items)} occurrence(s) substituted from the glossary "
                                  f"({'by DeepL' if mode == 'deepl' else 'after translation'}): {text}",
                                  {"occurrences": len(items), "terms": dict(pairs), "mode": mode},
                                  source=by_subject[subject][0].template.source))
    if glossary.entries:
        decisions.append(Decision(STAGE, "glossary", Path(glossary.path).name, "glossary-mode", mode,
                                  f"glossary applied {'by DeepL' if mode == 'deepl' else 'after translation'}: "
                                  f"{choice.reason}", {"mode": mode, "entries": len(glossary.entries),
                                                       "fingerprint": glossary.fingerprint},
                                  source=Path(glossary.path).name))
    return decisions


def translatable(templates: list[BBQTemplate], labels: dict[str, str], profile: Profile) -> list[BBQTemplate]:
    """The rows whose template is labelled with one of the profile's translated labels (ST, TM; EsBBQ's t, m). Labels
    compare by meaning: a labelling decision log says ST where an EsBBQ labels file says t."""
    meaning = profile.templates.meaning
    wanted = {meaning(label) for label in profile.translation.labels}
    return [t for t in templates if t.subject in labels and meaning(labels[t.subject]) in wanted]


def own_label(label: str, profile: Profile) -> str:
    """A label in the profile's own terms, for the templates it writes: KoBBQ's ST is EsBBQ's t."""
    if label in profile.templates.labels:
        return label
    return next((own for own, meaning in profile.templates.label_meanings.items() if meaning == label), label)


def load_labels(path) -> dict[str, str]:
    """BBQ template labels from a ``subject,label`` CSV, or from the labels stage's decision log."""
    fields, records = read_records(path)
    rows = [row for _, row in records]
    if {"subject", "label"} <= set(fields):
        return {r["subject"].strip(): r["label"].strip() for r in rows}
    if {"stage", "subject", "outcome"} <= set(fields):
        return {r["subject"]: r["outcome"] for r in rows
                if r["stage"] == "labels" and r.get("subject_type", "bbq_template") == "bbq_template"
                and r["outcome"] in ("ST", "TM", "SR")}
    raise UserError("expected columns subject,label (or a labelling decision log); found " + ", ".join(fields),
                    str(path))


@dataclass(frozen=True)
class CostEstimate:
    rows: int
    segments: int  # distinct segments
    cached_segments: int
    segments_to_send: int
    characters_to_send: int
    characters_cached: int
    estimated_cost: float
    currency: str

    def render(self, dry_run: bool = True) -> str:
        """The estimate, said as a dry run's result or as what a real run is about to send."""
        lead = "dry run" if dry_run else "to translate"
        return (f"{lead}: {self.rows} rows, {self.segments} distinct segments, {self.cached_segments} already cached "
                f"({self.characters_cached} characters); {'would send' if dry_run else 'sending'} {self.segments_to_send} segments, "
                f"{self.characters_to_send} characters, estimated cost {self.estimated_cost:.2f} {self.currency}")


def dry_run(templates: list[BBQTemplate], cache_path: Path, profile: Profile, glossary: Glossary) -> CostEstimate:
    """Count without calling DeepL (the glossary mode as ``choose_mode`` takes it without DeepL)."""
    with contextlib.ExitStack() as stack:  # a cache that does not exist yet is not created by a dry run
        cache = stack.enter_context(TranslationCache(cache_path)) if Path(cache_path).exists() else None
        mode = choose_mode(profile, glossary, None, recorded_mode(cache, profile, glossary) if cache else None).mode
        sents = list(dict.fromkeys(p.sent for p in protect_all(templates, glossary, mode).values()))
        cached = cache.get_many(sents, request_settings(profile, glossary, mode)) if cache else {}
    to_send = [s for s in sents if s not in cached]
    characters = sum(map(billable_characters, to_send))
    price = characters * profile.translation.price_per_million_characters / 1_000_000  # without the plan's base fee
    return CostEstimate(len(templates), len(sents), len(cached), len(to_send), characters,
                        sum(map(billable_characters, cached)), price, profile.translation.currency)
