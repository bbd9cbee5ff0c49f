"""Is a text written in the profile's language? Checked by its letters' Unicode scripts (``[writing]``).

More than half foreign letters is an error (an untranslated sentence); fewer are mixed text a language writes too
(a brand name): a warning that counts them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import cache
from itertools import groupby
from typing import NamedTuple

import regex
from fontTools.unicodedata import script as unicode_script, script_name  # the Script property's value, by name

from core.errors import Location
from core.findings import Finding
from core.profile import Profile, WritingProfile
from tasks.templates.slots import ParsedText

_LETTER = regex.compile(r"\p{L}")
_SHARED = regex.compile(r"[\p{Script=Common}\p{Script=Inherited}]")
FOREIGN_SHARE_MAX = 0.5  # above this share of foreign letters a text is in another script: an error


@cache
def _script_pattern(names: tuple[str, ...]) -> regex.Pattern[str]:
    return regex.compile("[" + "".join(rf"\p{{Script={name}}}" for name in names) + "]")


@dataclass(frozen=True)
class LetterCount:
    letters: int  # letters of the language's own scripts and foreign ones (not Common/Inherited)
    foreign: int
    sentence: int  # letters of the sentence scripts
    foreign_text: str  # the foreign letters as written (their first runs), for the message

    @property
    def foreign_share(self) -> float:
        return self.foreign / self.letters if self.letters else 0.0


class CharKind(NamedTuple):
    """What one character adds to a ``LetterCount`` (0 or 1 each)."""

    letter: int  # a letter of one script (not Common/Inherited)
    foreign: int  # such a letter outside the language's own scripts
    sentence: int  # such a letter of the sentence scripts


@cache
def _char_kind(char: str, own: tuple[str, ...], sentence: tuple[str, ...]) -> CharKind:
    """A character's kind under a writing, worked out once (Unicode-property matches on every character were most of the
    template checks' time); Common and Inherited letters (ー, combining marks) belong to every language: not counted."""
    if not _LETTER.match(char) or _SHARED.match(char):
        return CharKind(0, 0, 0)
    return CharKind(1, int(not _script_pattern(own).match(char)), int(bool(_script_pattern(sentence).match(char))))


def count_letters(text: str, writing: WritingProfile) -> LetterCount:
    """The letters of ``text`` by kind, each distinct character classified once (``_char_kind``)."""
    own, sentence = tuple(writing.scripts), tuple(writing.sentence_scripts or writing.scripts)
    letters = foreign = in_sentence = 0
    for char, times in Counter(text).items():
        kind = _char_kind(char, own, sentence)
        letters += kind.letter * times
        foreign += kind.foreign * times
        in_sentence += kind.sentence * times
    # The runs of foreign letters as written, for the message: a second walk, only for a text that has one.
    runs = ["".join(run) for is_foreign, run in groupby(text, lambda char: _char_kind(char, own, sentence).foreign)
            if is_foreign] if foreign else []
    return LetterCount(letters, foreign, in_sentence, ", ".join(dict.fromkeys(runs[:5])))


def scripts_of(text: str) -> list[str]:
    """The Unicode scripts of the letters of ``text`` (Lao, Latin, ...), most letters first."""
    counts = Counter(unicode_script(char) for char in text if _LETTER.match(char) and not _SHARED.match(char))
    return [script_name(code) for code, _ in counts.most_common()]


def script_findings(where: Location, text: str, writing: WritingProfile, sentence: bool, language: str
                    ) -> list[Finding]:
    """An error when ``text`` is written in another script (or, a ``sentence``, lacks the sentence scripts); a
    warning counting foreign letters in mixed text."""
    count = count_letters(text, writing)
    if not count.letters:
        return []
    own = ", ".join(writing.scripts)
    if count.foreign_share > FOREIGN_SHARE_MAX:
        found = ", ".join(scripts_of(count.foreign_text))
        return [Finding("error", where, "foreign-script",
                        f"written in {found} ({count.foreign} of {count.letters} letters: {count.foreign_text}), not "
                        f"in the scripts of {language} ({own}, [writing] scripts of the profile): is this text in "
                        "another language, or the profile the wrong one?")]
    findings = []
    if sentence and writing.sentence_scripts and not count.sentence:
        needed = " or ".join(writing.sentence_scripts)
        found = ", ".join(scripts_of(text))
        findings.append(Finding("error", where, "foreign-script",
                                f"has no {needed} letter, which every {language} sentence has ([writing] "
                                f"sentence_scripts); its letters are {found}: is this text in another language "
                                "written in the same script, or the profile the wrong one?"))
    if count.foreign:
        findings.append(Finding("warning", where, "mixed-script",
                                f"{count.foreign} of {count.letters} letters are not in the scripts of {language} "
                                f"({own}): {count.foreign_text}; mixed text such as a brand name is allowed, check "
                                "that it is meant"))
    return findings


def slot_text(parsed: ParsedText) -> str:
    """What a template text writes in the language: its literal pieces and its slots' items, not the slot names."""
    return " ".join([*parsed.pieces, *(item for slot in parsed.slots for item in slot.items or ())])


def profile_script_findings(profile: Profile) -> list[Finding]:
    """The unknown choice, written into every sample, must be in the profile's scripts (a profile copied from another
    culture keeps its word: 判断できない in a Chinese release); no ``[writing]`` at all is one warning, never silence."""
    where = Location(str(profile.path or profile.name), column="release.unknown_expression")
    if profile.writing is None:
        return [Finding("warning", replace(where, column="writing"), "script-unchecked",
                        f"profile {profile.name!r} states no [writing] scripts, so the script of the template texts "
                        "is not checked (a text in another language would pass)")]
    count = count_letters(profile.release.unknown_expression, profile.writing)
    if not count.foreign:
        return []
    return [Finding("error", where, "foreign-script",
                    f"the unknown choice {profile.release.unknown_expression!r}, written into every sample, has "
                    f"letters outside the scripts of {profile.language} ({', '.join(profile.writing.scripts)}): "
                    f"{count.foreign_text}; is it another culture's word?")]
