"""Korean particles after a slot: written once by the translator, inflected per filler.

A particle's form depends on the final consonant of the word before it (은/는, 이/가): the translator writes ``[N1]와``
and the list comes from ``Names``, so a filler cannot get the wrong form by oversight. The choice is ``hgtk``'s."""

from __future__ import annotations

import re
from dataclasses import dataclass

import hgtk

from core.errors import Location
from core.findings import Finding
from core.profile import Profile
from tasks.templates.slots import find_inline_slots
from tasks.templates.load import TEXT_COLUMNS, TemplateRow

Pair = tuple[str, str]  # (form after a final consonant, form after a vowel)
_HGTK_TYPES = {(t["not"], t["has"]): t for t in hgtk.josa.JOSA_TYPES}


def final_consonant(word: str) -> str | None:
    """The final consonant of the word's last letter ("" for a vowel), None when hgtk cannot tell."""
    stripped = word.strip()
    if not stripped:
        return None
    last = stripped[-1]
    try:
        return hgtk.letter.decompose(last)[2]
    except hgtk.exception.NotHangulException:
        substitute = hgtk.letter.get_substituent_of(last)
        return substitute if substitute or last.isalpha() else None


def choose_form(word: str, pair: Pair) -> str | None:
    """The form of ``pair`` that follows ``word``; None when the word's ending cannot be read."""
    ending = final_consonant(word)
    if ending is None:
        return None
    hgtk_type = _HGTK_TYPES.get(pair)
    if hgtk_type is not None:
        return hgtk.josa.attach(word, hgtk_type)[len(word):]
    return pair[1] if ending == "" else pair[0]


def pair_forms(pairs: list[Pair]) -> list[tuple[str, Pair]]:
    """Every form of every pair, longest first, so "으로" is read before "으" and "이나" before "이"."""
    return sorted(((form, pair) for pair in pairs for form in pair), key=lambda fp: -len(fp[0]))


def inflect(filler: str, suffix: str, pairs: list[Pair]) -> str:
    """``filler`` + ``suffix`` with the suffix's leading particle in the form the filler needs. A suffix that starts
    with no alternating particle (의, 에게, " 있는") is attached as written."""
    for form, pair in pair_forms(pairs):
        if suffix.startswith(form):
            chosen = choose_form(filler, pair)
            return filler + (chosen if chosen is not None else form) + suffix[len(form):]
    return filler + suffix


@dataclass(frozen=True)
class ExpandResult:
    text: str
    problems: list[str]  # slots used bare that are not declared


@dataclass(frozen=True)
class Shorthand:
    """How a bare slot in a post-edit becomes an inline list: ``suffix_characters`` (a character class body) may follow
    the slot and move into every filler (Korean "[N1]은"); without them what follows stays outside (Japanese "[N1]は")."""

    pairs: tuple[Pair, ...] = ()
    suffix_characters: str = ""
    joiner: str = ", "

    @classmethod
    def of(cls, profile: Profile) -> "Shorthand":
        pairs = tuple(tuple(p) for p in profile.particles.pairs) if profile.particles.enabled else ()
        return cls(pairs, profile.particles.suffix_characters, profile.templates.list_joiner)  # type: ignore[arg-type]

    @property
    def pattern(self) -> re.Pattern[str]:
        """A bare slot followed by the particle the translator attached to it: "[N1]은", "[W1]에서"."""
        suffix = f"([{self.suffix_characters}]*)" if self.suffix_characters else "()"
        return re.compile(r"\[([A-Z]+[0-9]*)\]" + suffix)


def expand_shorthand(text: str, slots: dict[str, tuple[str, ...]], style: Shorthand) -> ExpandResult:
    """``[N1]은`` -> ``[N1: 손자는, 손녀는]`` from the declared fillers; inline lists are left as written."""
    problems: list[str] = []

    def one(match: re.Match[str]) -> str:
        name, suffix = match.groups()
        fillers = slots.get(name)
        if fillers is None:
            problems.append(f"slot [{name}] is used but not declared in Names or Lexical_diversity")
            return match.group(0)
        return f"[{name}: {style.joiner.join(inflect(f, suffix, list(style.pairs)) for f in fillers)}]"

    return ExpandResult(style.pattern.sub(one, text), problems)


@dataclass(frozen=True)
class ItemCheck:
    where: Location
    template: str  # Category|ID|version
    slot: str
    index: int
    filler: str
    item: str
    expected: str | None  # the regenerated item; None when the stem is not the filler


@dataclass
class ParticleReport:
    items: int  # every item of every inline list paired with a declared filler
    agree: list[ItemCheck]
    disagree: list[ItemCheck]
    not_stem: list[ItemCheck]  # the item does not start with its filler: a different wording
    unpaired_lists: list[str]  # lists whose length differs from their declaration

    @property
    def checked(self) -> int:
        return len(self.agree) + len(self.disagree)

    @property
    def rate(self) -> float:
        return len(self.agree) / self.checked if self.checked else 1.0

    def summary_line(self) -> str:
        return f"particles: {len(self.agree)}/{self.checked} ({100 * self.rate:.2f}%)"

    def findings(self) -> list[Finding]:
        out = [Finding("error", c.where, "particle-disagrees",
                       f"{c.template} {c.slot}[{c.index + 1}]: written {c.item!r}, the filler {c.filler!r} with "
                       f"its particle gives {c.expected!r}") for c in self.disagree]
        out += [Finding("warning", c.where, "item-not-filler",
                        f"{c.template} {c.slot}[{c.index + 1}]: the inline item {c.item!r} does not start with "
                        f"the declared filler {c.filler!r}, so this text names the person differently")
                for c in self.not_stem]
        return out


def check_items(templates: list[TemplateRow], pairs: list[Pair]) -> ParticleReport:
    """Regenerate every inline item from its filler and the translator's particle; compare."""
    report = ParticleReport(0, [], [], [], [])
    for template in templates:
        declared = template.slots
        for field, column in TEXT_COLUMNS.items():
            for slot in find_inline_slots(template.texts[field]):
                fillers = declared.get(slot.name)
                if slot.items is None or fillers is None:
                    continue
                if len(fillers) != len(slot.items):
                    report.unpaired_lists.append(f"{template.key} {column} {slot.name}: {len(slot.items)} items, "
                                                 f"{len(fillers)} declared")
                    continue
                for index, (item, filler) in enumerate(zip(slot.items, fillers)):
                    report.items += 1
                    where = template.where(column)
                    if not item.startswith(filler):
                        report.not_stem.append(ItemCheck(where, template.key, slot.name, index, filler, item, None))
                        continue
                    expected = inflect(filler, item[len(filler):], pairs)
                    check = ItemCheck(where, template.key, slot.name, index, filler, item, expected)
                    (report.agree if expected == item else report.disagree).append(check)
    return report
