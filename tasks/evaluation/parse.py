"""From a model's free text to a letter A, B, C, or, out of choice, the text the parser gave up on (kept for ooc.tsv).

``paper_parser`` reproduces the paper's post-processing cascade rule for rule, quirks included ("Answer: C" reads as
A), because the published numbers depend on it; ``strict_parser`` accepts only an answer that names one choice. What
the rules look for in a language is the profile's ``[evaluation]`` section, compiled once into ``AnswerForms``
(docs/reference/scoring.md#how-an-answer-is-read).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import regex

from core.profile import EvaluationProfile

LETTERS = ("A", "B", "C")
# (b) what follows the first ":" or ")" of the line
AFTER_SEPARATOR = re.compile(r"[:)]\s*(?P<rest>.*)")
# (e) a labelled letter anywhere: "A:" or "A)"
LABELLED = {letter: re.compile(re.escape(letter) + r"[:)]") for letter in LETTERS}
# The strict parser: a bare letter (optionally bracketed, bold or quoted), or "A: <that choice>".
STRICT_DECORATION = "*'\"` \t\n"
STRICT_LETTER = re.compile(r"^\(?(?P<letter>[ABC])\)?[.:]?$", re.IGNORECASE)
STRICT_LABELLED = re.compile(r"^\(?(?P<letter>[ABC])[):]\s*(?P<text>.+?)\.?$", re.IGNORECASE | re.DOTALL)
WORD_CHARACTER = r"[\p{L}\p{M}\p{N}]"  # a label beside a letter, mark or digit is part of a word


@dataclass(frozen=True)
class AnswerForms:
    """The paper's cascade's patterns for one profile, compiled, every text in the profile's normalisation."""

    first_line: re.Pattern[str]  # (a) after leading spaces and one optional "(", up to the first sentence end
    retry: tuple[re.Pattern[str], ...]  # (d) bold text, the text after an answer marker, quoted text
    sentence_forms: tuple[tuple[str, str], ...]  # (a) read away from the first line, in order
    normalise: str  # "" or a Unicode form applied to the whole answer first
    prefixes: tuple[str, ...] = ()  # (a) read away from the start of the first line, longest first ("是")
    unknown: tuple[str, ...] = ()  # other phrasings of the unknown option (parse_answers), prepared
    labels: regex.Pattern[str] | None = None  # the profile's choice labels standing alone, a group per letter
    notes: tuple[str, ...] = ()  # the profile's texts its normalisation changes

    def prepare(self, raw: str) -> str:
        return unicodedata.normalize(self.normalise, raw) if self.normalise else raw

    def read_labels(self, text: str) -> str:
        """``text`` with each of the profile's choice labels that stands alone written as its letter (ก -> A)."""
        return self.labels.sub(lambda found: found.lastgroup, text) if self.labels else text


def answer_forms(settings: EvaluationProfile, unknown_expressions: Sequence[str] = ()) -> AnswerForms:
    """The cascade's patterns for a profile's ``[evaluation]`` settings (and its ``[release] unknown_expressions``).
    The ko values give the paper's own: ``^\\s*\\(?(?P<line>[^.\\n]*)`` and ``답변?[은:]`` (written there as the
    four markers it matches), no prefix, no label and no other phrasing of the unknown option."""
    return _compiled(settings.sentence_ends, tuple(settings.answer_markers),
                     tuple(map(tuple, settings.sentence_forms)), settings.normalise,
                     tuple(settings.answer_prefixes), tuple(unknown_expressions), tuple(settings.choice_labels))


@cache
def _compiled(sentence_ends: str, markers: tuple[str, ...], sentence_forms: tuple[tuple[str, str], ...],
              normalise: str, prefixes: tuple[str, ...] = (), unknown: tuple[str, ...] = (),
              labels: tuple[str, ...] = ()) -> AnswerForms:
    notes: dict[str, None] = {}

    def prepare(text: str) -> str:
        prepared = unicodedata.normalize(normalise, text) if normalise else text
        if prepared != text:
            notes[f"{normalise} changes the profile's {text!r} (to {ascii(prepared)}): it is compared with answers "
                  "and choices in that form"] = None
        return prepared

    ends = re.escape(prepare(sentence_ends))
    stop = f"[^{ends}\\n*'\"]*"
    retry = [re.compile(r"\*\*['\"]?(?P<text>" + stop + ")")]
    if markers:
        retry.append(re.compile(f"(?:{'|'.join(re.escape(prepare(m)) for m in markers)})"
                                + r"\s*['\"]?(?P<text>" + stop + ")"))
    retry.append(re.compile(r"['\"](?P<text>" + stop + ")"))
    label_pattern = None
    if labels:
        named = "|".join(f"(?P<{letter}>{regex.escape(prepare(label))})" for letter, label in zip(LETTERS, labels))
        label_pattern = regex.compile(f"(?<!{WORD_CHARACTER})(?:{named})(?!{WORD_CHARACTER})", regex.IGNORECASE)
    return AnswerForms(re.compile(r"^\s*\(?(?P<line>[^" + ends + r"\n]*)"), tuple(retry),
                       tuple((prepare(written), prepare(read)) for written, read in sentence_forms), normalise,
                       tuple(sorted(map(prepare, prefixes), key=len, reverse=True)),
                       tuple(dict.fromkeys(prepare(text) for text in unknown if text)), label_pattern, tuple(notes))


NO_FORMS = answer_forms(EvaluationProfile())  # a language with no markers or forms: the cascade's bare rules

Parser = Callable[[str, Mapping[str, str], AnswerForms], str]


def paper_parser(raw: str, choices: Mapping[str, str], forms: AnswerForms = NO_FORMS) -> str:
    """The paper's cascade (rules a-e of issue 12) in ``forms``' language; ``choices`` maps A, B, C to their texts."""
    text = forms.prepare(raw) if isinstance(raw, str) else ""
    return _cascade(text, {letter: forms.prepare(choice).lower() for letter, choice in choices.items()}, forms)


def _cascade(raw: str, choices: dict[str, str], forms: AnswerForms) -> str:
    line = forms.first_line.match(raw)["line"]
    for written, read in forms.sentence_forms:
        line = line.replace(written, read)
    prefix = next((p for p in forms.prefixes if line.startswith(p) and line[len(p):].strip()), "")
    line = forms.read_labels(line[len(prefix):].lstrip() if prefix else line)
    upper = line.upper()
    if upper and upper[0] in choices:
        letter = _letter_rule(line, upper, choices)
        if letter is not None:
            return letter
    texts = list(choices.values())
    if line.lower() in texts:
        return list(choices)[texts.index(line.lower())]
    for pattern in forms.retry:
        found = pattern.search(raw)
        if found:
            return _cascade(found["text"], choices, forms)
    upper = forms.read_labels(raw).upper()
    labelled = [letter for letter in choices if LABELLED[letter].search(upper)]
    return labelled[0] if len(labelled) == 1 else raw


def _letter_rule(line: str, upper: str, choices: dict[str, str]) -> str | None:
    """Rule (b) for a line starting with a letter; None sends the line on to rule (c)."""
    letter = upper[0]
    found = AFTER_SEPARATOR.search(upper)
    rest = found["rest"].strip() if found else ""
    if rest:
        if choices[letter] == rest.lower():
            return letter
        if sum(upper.count(text.upper()) for text in choices.values()) > 1:
            return line  # the line names several choices: out-of-choice
        return letter
    if sum(upper.count(candidate) for candidate in choices) == 1:
        return letter
    return None


def strict_parser(raw: str, choices: Mapping[str, str], forms: AnswerForms = NO_FORMS) -> str:
    """A letter only for a bare letter, "A: <A's text>" / "(A) <A's text>", or exactly one choice's text."""
    text = forms.read_labels(forms.prepare(raw) if isinstance(raw, str) else "").strip(STRICT_DECORATION)
    choices = {letter: forms.prepare(choice) for letter, choice in choices.items()}
    bare = STRICT_LETTER.match(text)
    if bare:
        return bare["letter"].upper()
    labelled = STRICT_LABELLED.match(text)
    if labelled and labelled["text"].strip(STRICT_DECORATION).lower() == choices[labelled["letter"].upper()].lower():
        return labelled["letter"].upper()
    matching = [letter for letter, choice in choices.items() if text.rstrip(".").lower() == choice.lower()]
    return matching[0] if len(matching) == 1 else (raw if isinstance(raw, str) else "")


PARSERS: dict[str, Parser] = {"paper": paper_parser, "strict": strict_parser}


def parse_answers(raws: Sequence[str], a: Sequence[str], b: Sequence[str], c: Sequence[str],
                  parser: Parser = paper_parser, forms: AnswerForms = NO_FORMS,
                  unknown: Sequence[str] | None = None) -> np.ndarray:
    """Parse many answers, an identical (answer, choices) pair once. ``unknown``: each row's wording of the unknown
    option; an out-of-choice answer naming one of ``forms.unknown`` instead is read as that option."""
    seen: dict[tuple[str, ...], str] = {}
    out = np.empty(len(raws), dtype=object)
    unknowns = unknown if unknown is not None else [""] * len(raws)
    for index, key in enumerate(zip(raws, a, b, c, unknowns)):
        parsed = seen.get(key)
        if parsed is None:
            choices = dict(zip(LETTERS, key[1:4]))
            parsed = parser(key[0], choices, forms)
            if parsed not in LETTERS and key[4] and forms.unknown:
                parsed = read_as_unknown(key[0], choices, key[4], parser, forms) or parsed
            seen[key] = parsed
        out[index] = parsed
    return out


def read_as_unknown(raw: str, choices: Mapping[str, str], unknown: str, parser: Parser, forms: AnswerForms
                    ) -> str | None:
    """The unknown option's letter when ``raw`` names it by another of the profile's phrasings: the answer parsed
    again with the option's text replaced by each phrasing in turn; None when none of them reads as that option."""
    letter = next((letter for letter, text in choices.items() if text == unknown), None)
    if letter is None:
        return None
    for expression in forms.unknown:
        if parser(raw, {**choices, letter: expression}, forms) == letter:
            return letter
    return None


def changed_choice(forms: AnswerForms, texts: Iterable[str]) -> tuple[str, str] | None:
    """The first choice text the profile's reading changes, and what changes it (a sentence form written in it, or
    one of its choice labels standing alone in it): an answer naming that choice would be misread. None: none."""
    for text in texts:
        prepared = forms.prepare(text)
        written = next((written for written, _ in forms.sentence_forms if written and written in prepared), None)
        if written is not None:
            return text, f"the sentence form {written!r}"
        if forms.read_labels(prepared) != prepared:
            return text, "a choice label standing alone in it"
    return None
