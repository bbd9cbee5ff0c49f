"""Placeholders survive machine translation: protected as XML tags, restored, verified.

Sent as plain text, DeepL may translate, inflect or drop BBQ's ``{{NAME1}}``; as self-closing XML tags with
``tag_handling="xml"`` it moves them as units. Glossary terms DeepL cannot apply itself are protected the same way and
restored to their target text. A translation that lost or duplicated a tag is flagged, never accepted silently."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from xml.sax.saxutils import escape, unescape

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


def term_pattern(term: str) -> re.Pattern[str]:
    """A glossary term as a whole word or phrase, case-insensitive (``Walmart``, ``rugby``)."""
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", re.IGNORECASE)


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
