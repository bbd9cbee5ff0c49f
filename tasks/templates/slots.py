"""Slot syntax of the KoBBQ format (``docs/new-culture.md`` 0.4): inline lists (``[N1: 손자와, 손녀와]``) and the
``Names``/``Lexical_diversity`` declarations (``N1: [손자, 손녀]``). List punctuation the profile does not accept is
an error, never one filler."""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from core.errors import Location
from core.findings import Finding
from core.profile import Profile

SLOT_NAME = r"[A-Z]+[0-9]*"
PERSON_SLOTS = ("N1", "N2")

# An inline slot: [N1: a, b, c] or a bare [N1]. Items cannot contain brackets.
INLINE_SLOT = re.compile(r"\[(" + SLOT_NAME + r")(?::([^\[\]]*))?\]")
_DECLARATION = re.compile(r"^\s*(" + SLOT_NAME + r")\s*:\s*\[([^\[\]]*)\]\s*$")
# Punctuation that separates list items in some writing system: Unicode's Terminal_Punctuation that does not end a
# sentence, the commas and semicolons of every script ("," "、" "，" "،" "፣" ";"). Not the middle dots "·" and "・",
# which join words inside a name (중동·북아프리카인, ジョン・スミス), nor a full stop (St. Louis), nor the colon,
# which is the slot syntax's own ("N1: [...]") and a time's (10:30).
SEPARATOR_LIKE = regex.compile(r"[\p{Terminal_Punctuation}--\p{Sentence_Terminal}--:]", regex.V1)
DEFAULT_SEPARATORS = (",",)
_BRACKET = re.compile(r"[\[\]]")
_BRACKETED = re.compile(r"\[[^\[\]]*\]")


class SlotSyntaxError(ValueError):
    """A slot declaration or inline list that cannot be parsed; the message says what was expected."""


def split_items(body: str, separators: tuple[str, ...] = DEFAULT_SEPARATORS) -> tuple[str, ...]:
    """Split ``a, b, c`` at any of ``separators``; empty items are kept so that validation can report them."""
    if len(separators) == 1:
        return tuple(item.strip() for item in body.split(separators[0]))
    return tuple(item.strip() for item in re.split("|".join(map(re.escape, separators)), body))


def foreign_separators(items: tuple[str, ...], separators: tuple[str, ...]) -> list[str]:
    """List punctuation inside the items that the profile does not accept as a separator, in order of first use."""
    found = [char for item in items for char in SEPARATOR_LIKE.findall(item) if char not in separators]
    return list(dict.fromkeys(found))


def list_findings(where: Location, name: str, items: tuple[str, ...], profile: Profile) -> list[Finding]:
    """A slot list written with a separator the profile does not accept would become one filler: an error. In a
    language written without spaces between words, an item with a space is probably two: a warning."""
    first = profile.templates.list_separators[0]
    findings = []
    if foreign := foreign_separators(items, profile.templates.separators):
        accepted = " ".join(repr(s) for s in profile.templates.separators)
        written = " ".join(repr(c) for c in foreign)
        addable = f", or add {foreign[0]!r} to [templates] list_separators" if foreign[0] != ";" else ""
        findings.append(Finding("error", where, "slot-separator",
                                f"slot {name}'s list [{', '.join(items)}] contains {written}, which profile "
                                f"{profile.name!r} does not accept between items (it accepts {accepted}): separate "
                                f"the items with {first!r}{addable}"))
    if profile.writing is not None and not profile.writing.spaces_between_words:
        findings += [Finding("warning", where, "slot-item-space",
                             f"item {item!r} of slot {name} has a space, and {profile.language} is written without "
                             f"spaces between words ([writing] spaces_between_words): if it is several items, "
                             f"separate them with {first!r}") for item in items if " " in item]
    return findings


def parse_declarations(text: str, separators: tuple[str, ...] = DEFAULT_SEPARATORS) -> dict[str, tuple[str, ...]]:
    """Parse ``N1: [a, b]; N2: [c]`` into ``{"N1": ("a", "b"), "N2": ("c",)}``."""
    slots: dict[str, tuple[str, ...]] = {}
    if not text.strip():
        return slots
    for part in text.split(";"):
        if not part.strip():
            continue
        match = _DECLARATION.match(part)
        if match is None:
            raise SlotSyntaxError(f"cannot read slot declaration {part.strip()!r}; expected 'NAME: [item, item]'")
        name, body = match.groups()
        if name in slots:
            raise SlotSyntaxError(f"slot {name} is declared twice")
        slots[name] = split_items(body, separators)
    return slots


@dataclass(frozen=True)
class InlineSlot:
    name: str
    items: tuple[str, ...] | None  # None for a bare [N1]
    start: int
    end: int


def find_inline_slots(text: str, separators: tuple[str, ...] = DEFAULT_SEPARATORS) -> list[InlineSlot]:
    return [
        InlineSlot(m.group(1), None if m.group(2) is None else split_items(m.group(2), separators), m.start(), m.end())
        for m in INLINE_SLOT.finditer(text)
    ]


@dataclass(frozen=True)
class ParsedText:
    """A text split at its inline slots: ``pieces[i]`` is the literal text before ``slots[i]``."""

    pieces: tuple[str, ...]  # len(slots) + 1
    slots: tuple[InlineSlot, ...]


def parse_text(text: str, separators: tuple[str, ...] = DEFAULT_SEPARATORS) -> ParsedText:
    slots = find_inline_slots(text, separators)
    bounds = [0, *(b for slot in slots for b in (slot.start, slot.end)), len(text)]
    return ParsedText(tuple(text[bounds[i]:bounds[i + 1]] for i in range(0, len(bounds), 2)), tuple(slots))


def bracket_problems(text: str) -> list[str]:
    """Brackets that do not pair up, or nest; either makes the slot syntax ambiguous."""
    problems = []
    depth = 0
    for bracket in _BRACKET.finditer(text):  # the brackets only: a loop over every character was slow
        position, char = bracket.start(), bracket.group()
        if char == "[":
            if depth:
                problems.append(f"'[' at character {position + 1} opens inside another bracket")
            depth += 1
        elif char == "]":
            if not depth:
                problems.append(f"']' at character {position + 1} closes nothing")
                continue
            depth -= 1
    if depth:
        problems.append("a '[' is never closed")
    # Anything bracketed that is not slot syntax, e.g. '[n1: a]' or '[N1 a, b]'.
    for match in _BRACKETED.finditer(INLINE_SLOT.sub("", text)):
        problems.append(f"{match.group(0)[:40]!r} is bracketed but is not slot syntax '[NAME: item, item]'")
    return problems
