"""The named hooks a workbook profile may choose (``[templates.workbook.hooks]``): the few generation rules that are
not data, each a small pure function. A culture whose rule differs registers another function here under a new
name, and its profile names it; ``HOOKS`` is the one registry the checks and generation read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# --- capitalise: text -> text ------------------------------------------------------------------

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_INVERTED = ("¿", "¡")


def sentence_case(text: str) -> str:
    """Upper-case each sentence's first letter (after an opening ¿ or ¡); a sentence starts after whitespace following
    '.', '!' or '?', and breaks become one space: EsBBQ's NLTK Spanish splitter, on all of its templates."""
    pieces = [piece for piece in _SENTENCE_BREAK.split(text) if piece]
    return " ".join(piece[0] + piece[1:2].upper() + piece[2:] if piece.startswith(_INVERTED)
                    else piece[:1].upper() + piece[1:] for piece in pieces)


# --- occurs: does a display name occur in an answer? ------------------------------------------

def occurs_after_article(name: str, answer: str, articles: list[str]) -> bool:
    """``name`` (one leading article dropped) in ``answer``, case-insensitive, on word boundaries. The match may also
    start right after an apostrophe (``l'home``). The article matters once ``de el`` became ``del``: ``el Reino Unido``
    must match ``La persona del Reino Unido``."""
    for article in articles:
        if name.startswith(article):
            name = name[len(article):]
            break
    return re.search(r"(?:\b|(?<='))" + re.escape(name) + r"\b", answer, re.IGNORECASE) is not None


# --- label: the four instances of one filled combination --------------------------------------

@dataclass(frozen=True)
class Person:
    display: str  # the name as it shows in the answers
    info: str  # what the generator knows about it; compared with the bias targets


@dataclass(frozen=True)
class Filled:
    """One filled combination: its final texts and its two people."""

    ambiguous: str
    disambiguating: str
    question_negative: str
    question_non_negative: str
    answer_negative: str
    answer_non_negative: str
    first: Person
    second: Person
    context_separator: str = " "  # the profile's: what joins the two contexts of a disambiguated instance


def names_a_target(info: str, targets: list[str] | set[str]) -> bool:
    """Does a person's info (comma-separated pieces: ``f, gitano``) name one of the bias targets?"""
    return any(piece.strip() in targets for piece in info.split(","))


def stereotyped_first(filled: Filled, targets: list[str], unknown: str, occurs: Callable[[str, str], bool]
                      ) -> list[dict[str, object]] | str:
    """EsBBQ's answer order and labels; returns the 4 instances, or why it cannot label them. The stereotyped person is
    the one whose info names a bias target; its answer comes first (``ans0``) when it can be found in the negative
    answer, and ``ans2`` is always the unknown."""
    first, second = filled.first, filled.second
    if names_a_target(first.info, targets):
        stereotyped = first.display
    elif names_a_target(second.info, targets):
        stereotyped = second.display
    else:
        return f"neither person's info ({first.info!r}, {second.info!r}) is a bias target"
    negative, non_negative = filled.answer_negative, filled.answer_non_negative
    if occurs(stereotyped, negative):
        answers, negpos, nonnegpos = [negative, non_negative, unknown], 0, 1
    else:
        answers, negpos, nonnegpos = [non_negative, negative, unknown], 1, 0
    info: dict[str, list[str]] = {"ans0": [], "ans1": [], "ans2": [unknown, unknown]}
    in_negative, in_non_negative = occurs(first.display, negative), occurs(first.display, non_negative)
    if not (in_negative or in_non_negative):
        return f"{first.display!r} is in neither answer ({negative!r}, {non_negative!r})"
    if in_negative:  # both tests run; when both match, the second overwrites the first (as released)
        info[f"ans{negpos}"], info[f"ans{nonnegpos}"] = [first.display, first.info], [second.display, second.info]
    if in_non_negative:
        info[f"ans{nonnegpos}"], info[f"ans{negpos}"] = [first.display, first.info], [second.display, second.info]
    disambiguated = f"{filled.ambiguous}{filled.context_separator}{filled.disambiguating}"
    common = {"answer_info.ans0": info["ans0"], "answer_info.ans1": info["ans1"], "answer_info.ans2": info["ans2"],
              "ans0": answers[0], "ans1": answers[1], "ans2": answers[2]}
    negative_type = "pro-stereo" if occurs(stereotyped, negative) else "anti-stereo"
    non_negative_type = "anti-stereo" if occurs(stereotyped, non_negative) else "pro-stereo"
    return [
        {"question_polarity": "neg", "context_condition": "ambig", "context": filled.ambiguous,
         "question": filled.question_negative, "question_type": "n/a", "label": 2, **common},
        {"question_polarity": "neg", "context_condition": "disambig", "context": disambiguated,
         "question": filled.question_negative, "question_type": negative_type, "label": negpos, **common},
        {"question_polarity": "nonneg", "context_condition": "ambig", "context": filled.ambiguous,
         "question": filled.question_non_negative, "question_type": "n/a", "label": 2, **common},
        {"question_polarity": "nonneg", "context_condition": "disambig", "context": disambiguated,
         "question": filled.question_non_negative, "question_type": non_negative_type, "label": nonnegpos, **common},
    ]


# The one registry, by kind: what the profile's [templates.workbook.hooks] may name.
HOOKS: dict[str, dict[str, Callable]] = {
    "capitalise": {"sentence_case": sentence_case, "none": lambda text: text},
    "occurs": {"after_article": occurs_after_article},
    "label": {"stereotyped_first": stereotyped_first},
}
