"""Text hygiene by Unicode properties: what every cell that enters a release is checked for (``check_text``: invisible
format characters and surrogates are errors, controls and unusual spaces warnings, each named with its cell and code
point) and normalised to (``normalise_text``). The rules and a profile's ``[writing] allowed_characters``:
docs/new-culture.md."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import Location
from core.findings import Finding, Severity

if TYPE_CHECKING:
    from core.profile import Profile

LINE_BREAKS = "\t\n\r"  # controls that are whitespace in a cell (a line break in a spreadsheet cell): collapsed
PLAIN = " \t\n\r"  # the characters of categories C and Z that every text may hold
_RUNS = re.compile(r"[ \t\n\r]+")
# Unicode category -> severity, code and what the character is, for the message.
RULES: dict[str, tuple[Severity, str, str]] = {
    "Cf": ("error", "format-character", "an invisible format character: delete it (a character the language "
                                        "needs is listed in the profile's [writing] allowed_characters)"),
    "Cs": ("error", "surrogate", "half of a UTF-16 surrogate pair, from a damaged file: retype the text around it"),
    "Cc": ("warning", "control-character", "a control character; the build writes a plain space in its place"),
    **dict.fromkeys(("Zs", "Zl", "Zp"), ("warning", "space-character",
                                         "a space other than the plain one; the build writes a plain space in its "
                                         "place (a space the language writes is listed in [writing] "
                                         "allowed_characters)")),
}


def code_point(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``; a control character has no name (``U+0008``)."""
    return f"U+{ord(char):04X} {unicodedata.name(char, '')}".strip()


def check_text(text: str, where: Location, allowed: str = "") -> list[Finding]:
    """One finding per distinct character of ``text`` that ``RULES`` names and ``allowed`` does not hold."""
    if text.isprintable():  # no character of categories C and Z but the plain space: the common case, at C speed
        return []
    findings = []
    for char in dict.fromkeys(text):
        rule = RULES.get(unicodedata.category(char))
        if rule is not None and char not in allowed and char not in PLAIN:
            severity, code, what = rule
            findings.append(Finding(severity, where, code, f"contains {code_point(char)}, {what}"))
    return findings


@dataclass(frozen=True)
class Normalisation:
    """What normalising one text changed, for the build's normalisation report."""

    control_characters: int
    nfc_changed: bool
    whitespace_changed: bool


def plain_spaces(text: str, allowed: str = "") -> tuple[str, str]:
    """``text`` with its control characters, then also its other spaces, as plain spaces (what ``allowed`` holds
    and line breaks kept): the text after the first step and after the second. A control character becomes a space
    rather than disappearing and gluing words (``손자는]\\x08적극적으로``)."""
    if text.isprintable():
        return text, text
    kinds = [unicodedata.category(char) for char in text]
    controls = "".join(" " if kind == "Cc" and char not in LINE_BREAKS else char for char, kind in zip(text, kinds))
    spaces = "".join(" " if kind[0] == "Z" and char not in allowed else char for char, kind in zip(controls, kinds))
    return controls, spaces


def normalise_text(text: str, allowed: str = "") -> tuple[str, Normalisation]:
    nfc = unicodedata.normalize("NFC", text)
    cleaned, spaced = plain_spaces(nfc, allowed)
    collapsed = _RUNS.sub(" ", spaced).strip()
    controls = 0 if cleaned is nfc else sum(1 for before, after in zip(nfc, cleaned) if before != after)
    return collapsed, Normalisation(controls, nfc != text, collapsed != cleaned)


def allowed_characters(profile: Profile) -> str:
    """The characters ``check_text`` lets pass under a profile: its ``[writing] allowed_characters`` (none without)."""
    return profile.writing.allowed if profile.writing is not None else ""
