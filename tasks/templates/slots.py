"""Slot syntax of culturally adapted templates, and the text normalisation applied to them.

In the KoBBQ format a slot is written inline where it is used, with its fillers already
inflected for the particle that follows: ``[N1: 손자와, 손녀와]``. The declared fillers live in
``Names`` (``N1: [손자, 손녀]; N2: [...]``) and ``Lexical_diversity`` (``W1: [...]; X2: [...]``).
A bare ``[N1]`` (no list) is legal in the English ``_translated`` columns and in post-edits.

What separates a list's items is the profile's (``[templates] list_separators``: "," for KoBBQ,
also "、" for Japanese). ``foreign_separators`` finds any other list punctuation inside an item, so
that ``[孫息子、孫娘]`` under a profile that does not accept "、" is an error, not one filler.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from core.errors import Location
from core.findings import Finding
from core.profile import Profile

SLOT_NAME = r"[A-Z]+[0-9]*"
PERSON_SLOTS = ("N1", "N2")

# An inline slot: [N1: a, b, c] or a bare [N1]. Items cannot contain brackets.
INLINE_SLOT = re.compile(r"\[(" + SLOT_NAME + r")(?::([^\[\]]*))?\]")
_DECLARATION = re.compile(r"^\s*(" + SLOT_NAME + r")\s*:\s*\[([^\[\]]*)\]\s*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Punctuation that separates list items in some writing system (Latin and CJK commas, semicolons). Not the
# middle dots "·" / "・", which join words inside a name (중동·북아프리카인, ジョン・スミス).
SEPARATOR_LIKE = ",、，､;；"
DEFAULT_SEPARATORS = (",",)
_SPACES = re.compile(r"\s+")
_BRACKET = re.compile(r"[\[\]]")
_BRACKETED = re.compile(r"\[[^\[\]]*\]")


class SlotSyntaxError(ValueError):
    """A slot declaration or inline list that cannot be parsed; the message says what was expected."""


def split_items(body: str, separators: tuple[str, ...] = DEFAULT_SEPARATORS) -> tuple[str, ...]:
    """Split ``a, b, c`` into its items at any of ``separators``; empty items are kept so that validation can
    report them."""
    if len(separators) == 1:
        return tuple(item.strip() for item in body.split(separators[0]))
    return tuple(item.strip() for item in re.split("|".join(map(re.escape, separators)), body))


def foreign_separators(items: tuple[str, ...], separators: tuple[str, ...]) -> list[str]:
    """List punctuation inside the items that the profile does not accept as a separator, in order of first use."""
    found = [char for item in items for char in item if char in SEPARATOR_LIKE and char not in separators]
    return list(dict.fromkeys(found))


def separator_findings(where: Location, name: str, items: tuple[str, ...], profile: Profile) -> list[Finding]:
    """A slot list written with a separator the profile does not accept would become one filler: an error."""
    foreign = foreign_separators(items, profile.templates.separators)
    if not foreign:
        return []
    accepted = " ".join(repr(s) for s in profile.templates.separators)
    written = " ".join(repr(c) for c in foreign)
    return [Finding("error", where, "slot-separator",
                    f"slot {name}'s list [{', '.join(items)}] contains {written}, which profile {profile.name!r} does not "
                    f"accept between items (it accepts {accepted}): separate the items with "
                    f"{profile.templates.list_separators[0]!r}, or add {foreign[0]!r} to [templates] list_separators")]


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
    stripped = INLINE_SLOT.sub("", text)
    for match in _BRACKETED.finditer(stripped):
        problems.append(f"{match.group(0)[:40]!r} is bracketed but is not slot syntax '[NAME: item, item]'")
    return problems


@dataclass(frozen=True)
class Normalisation:
    """What normalising one text changed, for the build's normalisation report."""

    control_characters: int
    nfc_changed: bool
    whitespace_changed: bool


def normalise_text(text: str) -> tuple[str, Normalisation]:
    """NFC, control characters to spaces, runs of whitespace collapsed, ends stripped.

    Control characters (U+0008 in ten KoBBQ rows) sit where a space belongs, e.g.
    ``손자는]\\x08적극적으로``, so they become a space rather than disappearing and gluing words.
    """
    nfc = unicodedata.normalize("NFC", text)
    controls = len(_CONTROL.findall(nfc))
    cleaned = _CONTROL.sub(" ", nfc) if controls else nfc
    collapsed = _SPACES.sub(" ", cleaned).strip()
    return collapsed, Normalisation(controls, nfc != text, collapsed != cleaned)


