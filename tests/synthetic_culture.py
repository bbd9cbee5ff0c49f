"""A culture the project has never seen, generated: its profile, its consensus, its translator's post-edits and
its groups, in a script no shipped profile writes (Georgian, Devanagari, Thai, Ethiopic), with or without spaces
between words, with or without sentence-final marks, with or without its own choice labels, with or without odd
space characters typed by its translator.

The people's work is the Japanese example's (``templates_raw/example_ja``: its English BBQ templates, labels,
post-edits that keep the version convention, groups), written in the drawn script by an injective map from each
character the Japanese uses to a syllable of two letters of the script (a consonant and a consonant or vowel sign),
so that every text is a different word where the Japanese had a different word, every list keeps its items, and
nothing Japanese is left. DeepL's drafts are the example's recorded ones (its cache, replayed offline: the culture's
``deepl_target_lang`` is the example's), so the chain needs no network and no Prefect.
"""

from __future__ import annotations

import csv
import random
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w
from hypothesis import strategies as st
from openpyxl import load_workbook

from core.paths import PROJECT_ROOT
from tasks.translation.workbook import FOLLOWS

EXAMPLE = PROJECT_ROOT / "templates_raw" / "example_ja"
JA_PROFILE = PROJECT_ROOT / "core" / "profiles" / "ja" / "ja.toml"
# The categories of the example's BBQ templates (its newly-created category is not generated).
CATEGORIES = ("Age", "Religion", "SES")
ASCII_KEPT = re.compile(r"[\x20-\x7e]")  # brackets, slot names, ":" and ";" of a cell stay as the format writes them
ODD_SPACES = ("\u00a0", "\u2009", "\u202f", "\u3000", "\u2002")
# BBQ's templates whose version a is the biased one: the example's translator exchanged their versions' texts.
EXCHANGED = {("Age", "2"), ("Age", "4"), ("Religion", "1"), ("SES", "2")}
PARTNER = {"a": "b", "b": "a"}
PUNCTUATION = {"、": "comma", "，": "comma", "。": "full_stop", "？": "question", "！": "full_stop", "：": "colon",
               "「": "", "」": "", "（": "(", "）": ")"}


@dataclass(frozen=True)
class Script:
    """A writing system the project ships no profile for: its letters and its punctuation."""

    name: str  # as Unicode's Scripts property names it (fontTools.unicodedata), for [writing] scripts
    language: str  # a BCP-47 code of a language written in it
    consonants: str  # what starts a syllable
    seconds: str  # what follows it: consonants and, where the script has them, vowel signs (combining marks)
    full_stop: str
    question: str
    comma: str


def _letters(first: int, last: int, skip: str = "") -> str:
    return "".join(chr(c) for c in range(first, last + 1) if chr(c) not in skip)


SCRIPTS = (
    Script("Georgian", "ka", _letters(0x10D0, 0x10F0), _letters(0x10D0, 0x10F0), ".", "?", ","),
    # Devanagari: the letters with a nukta (U+0958-U+095F) as Hindi keyboards type them, which NFC decomposes.
    Script("Devanagari", "hi", _letters(0x0915, 0x0939) + _letters(0x0958, 0x095F),
           _letters(0x0915, 0x0939) + _letters(0x0958, 0x095F) + _letters(0x093E, 0x094C), "\u0964", "?", ","),
    # Thai: SARA AM (U+0E33) is one of its vowels, and NFKC writes it as two characters.
    Script("Thai", "th", _letters(0x0E01, 0x0E2E), _letters(0x0E01, 0x0E2E) + "\u0e31\u0e33" + _letters(0x0E34, 0x0E39),
           "", "", " "),
    Script("Ethiopic", "am", _letters(0x1200, 0x1247), _letters(0x1200, 0x1247), "\u1362", "\u1367", "\u1363"),
    # Right to left, with vowel points (combining marks).
    Script("Hebrew", "he", _letters(0x05D0, 0x05EA), _letters(0x05D0, 0x05EA) + _letters(0x05B0, 0x05B9), ".", "?",
           ","),
    # Khmer: no spaces between words in writing, its own full stop (KHAN).
    Script("Khmer", "km", _letters(0x1780, 0x17A2), _letters(0x1780, 0x17A2) + _letters(0x17B6, 0x17C5), "\u17d4",
           "?", " "),
)


@dataclass(frozen=True)
class Culture:
    """One drawn culture: how its language is written, and what its translator typed."""

    script: Script
    spaces: bool  # words are separated by spaces
    marks: bool  # sentences end with a mark (else with nothing, as Thai)
    labels: bool  # the profile declares its own choice labels
    odd_space: str  # "" or the odd space character the translator (and the team) typed where a space goes
    marks_exchanges: bool  # the translator marks the versions exchanged (Follows_version), as the workbook asks
    own_list_comma: bool  # slot lists are written with the script's own comma ("፣"), where it has one
    seed: int  # which syllable each character of the Japanese becomes, which letters are the choice labels

    @property
    def list_comma(self) -> str:
        return self.script.comma if self.own_list_comma and self.script.comma.strip() else ","

    @property
    def full_stop(self) -> str:
        return self.script.full_stop if self.marks else ""

    @property
    def question(self) -> str:
        return self.script.question if self.marks else ""


def cultures() -> st.SearchStrategy[Culture]:
    return st.builds(Culture, st.sampled_from(SCRIPTS), st.booleans(), st.booleans(), st.booleans(),
                     st.sampled_from(("", *ODD_SPACES)), st.booleans(), st.booleans(), st.integers(0, 2**32))


class Writer:
    """The culture's writing of the Japanese example's texts: one syllable per character, words as the culture
    separates them, its own punctuation."""

    def __init__(self, culture: Culture, characters: list[str]) -> None:
        script = culture.script
        syllables = [c + s for c in script.consonants for s in script.seconds]
        random.Random(culture.seed).shuffle(syllables)
        self.syllable = dict(zip(sorted(characters), syllables))  # injective: a syllable of its own for each
        self.culture = culture

    def write(self, text: str, in_list: bool = False) -> str:
        """``text`` in the culture's writing; ``in_list``: the text between a list's brackets."""
        out: list[str] = []
        depth = 0
        for char in text:
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            if ASCII_KEPT.match(char):
                out.append(char)
            elif char in PUNCTUATION:
                out.append(self.punctuation(char, in_list or depth > 0))
            else:
                if out and self.culture.spaces and out[-1] and out[-1][-1] not in " [:(" and ord(char) % 3 == 0:
                    out.append(" ")
                out.append(self.syllable[char])
        return "".join(out).strip()

    def punctuation(self, char: str, listed: bool) -> str:
        kind = PUNCTUATION[char]
        if listed and kind == "comma":
            return self.culture.list_comma
        if kind in ("comma", "full_stop", "question"):
            script = self.culture.script
            mark = {"comma": script.comma, "full_stop": self.culture.full_stop, "question": self.culture.question}
            return mark[kind] + (" " if self.culture.spaces and kind != "question" else "")
        return {"colon": ":"}.get(kind, kind)

    def typed(self, text: str) -> str:
        """What the translator typed: the first plain space as the culture's odd space, if it has one."""
        return text.replace(" ", self.culture.odd_space, 1) if self.culture.odd_space else text


def japanese_texts() -> list[str]:
    """Every text of the example a culture writes: post-edits, groups, the unknown option and the profile's words."""
    texts = [*PROFILE_WORDS.values()]
    for path in sorted((EXAMPLE / "translation" / "returned").glob("*.xlsx")):
        texts += [str(r[8]) for r in load_workbook(path, read_only=True)["templates"].iter_rows(min_row=2,
                                                                                                  values_only=True)
                  if r[8] is not None]
    with (EXAMPLE / "groups.csv").open(encoding="utf-8", newline="") as handle:
        texts += [cell for row in csv.reader(handle) for cell in row]
    return texts


# The profile's own words, in Japanese before they are written in the culture's script.
PROFILE_WORDS = {"unknown": "判断できない", "unknown_2": "わからない", "marker": "答え", "marker_2": "回答",
                 "prefix": "それは", "instruction": "次の文章を読み質問に答えてください", "context": "文章",
                 "question": "質問", "culture": "架空の国", "adjective": "架空の", "rationale": "全員一致",
                 "guide": "次のテンプレートを読み、ラベルを付けてください",
                 "instructions": "下書きを読み、この国の言葉で書き直してください"}


def writer_for(culture: Culture) -> Writer:
    characters = sorted({c for text in japanese_texts() for c in text
                         if not ASCII_KEPT.match(c) and c not in PUNCTUATION and not c.isspace()})
    return Writer(culture, characters)


def choice_labels(culture: Culture) -> list[str]:
    """Three letters of the script, each alone: the culture's A, B, C (ก, ข, ค)."""
    return random.Random(culture.seed).sample(culture.script.consonants, 3) if culture.labels else []


def profile_toml(culture: Culture, words: dict[str, str]) -> str:
    """The Japanese example's profile with everything Japanese replaced by the culture's."""
    data = tomllib.loads(JA_PROFILE.read_text(encoding="utf-8"))
    script = culture.script
    data.update(name="sy", language=script.language, description="SyBBQ, a generated culture's adaptation of BBQ")
    data["culture"] = {"name": words["culture"], "adjective": words["adjective"]}
    data["writing"] = {"scripts": [script.name], "spaces_between_words": culture.spaces}
    data["release"].update(name="SyBBQ", unknown_expression=words["unknown"],
                           unknown_expressions=[words["unknown"], words["unknown_2"]])
    data["templates"].update(context_separator=" " if culture.spaces else "",
                             list_separators=list(dict.fromkeys([culture.list_comma, ","])),
                             list_separator_space=" " if culture.spaces else "")
    data["survey"].update(quota_genders=[words["marker"], words["marker_2"]],
                          quota_age_bands=[words["context"], words["question"]])
    evaluation = {"sentence_ends": "." + culture.full_stop, "normalise": "NFKC",
                  "answer_markers": [words["marker"] + ":", words["marker_2"] + ":"],
                  "answer_prefixes": [words["prefix"]]}
    if culture.labels:
        evaluation["choice_labels"] = choice_labels(culture)
    data["evaluation"] = evaluation
    data["categories"] = [c for c in data["categories"] if c["name"] in CATEGORIES]
    data["card"] = {"pretty_name": "SyBBQ (a generated culture)", "languages": [script.language]}
    return tomli_w.dumps(data)


def prompt_table(culture: Culture, words: dict[str, str]) -> str:
    """Two prompts in the culture's words: the first presents its own labels when it has them."""
    a, b, c = choice_labels(culture) or ["A", "B", "C"]
    head = "prompt_id\tinstruction\tcontext\tquestion\ta\tb\tc\tanswer\tunknown\n"
    return (head + f"1\t{words['instruction']}\t{words['context']}: \t{words['question']}: \t{a}) \t{b}) \t{c}) \t"
            f"{words['marker']}: \t{words['unknown']}\n"
            f"2\t{words['instruction']}\t{words['context']}: \t{words['question']}: \t(A) \t(B) \t(C) \t"
            f"{words['marker_2']}: \t{words['unknown_2']}\n")


def write_team(team: Path, culture: Culture, writer: Writer) -> Path:
    """The culture's own folder (its profile, consensus, groups, pipeline file); returns the pipeline file."""
    words = {key: writer.write(text) for key, text in PROFILE_WORDS.items()}
    profile = team / "sy"
    profile.mkdir(parents=True)
    (profile / "sy.toml").write_text(profile_toml(culture, words), encoding="utf-8")
    (profile / "evaluation_prompts.tsv").write_text(prompt_table(culture, words), encoding="utf-8")
    shutil.copy(JA_PROFILE.parent / "glossary.csv", profile)  # the recorded drafts were made with it
    (profile / "labelling_guide.txt").write_text(words["guide"] + "\n", encoding="utf-8")
    (profile / "postedit_instructions.txt").write_text(words["instructions"] + "\n", encoding="utf-8")
    with (EXAMPLE / "labels" / "consensus.csv").open(encoding="utf-8", newline="") as handle:
        labels = [(row["template"], row["label"]) for row in csv.DictReader(handle)]
    (team / "consensus.csv").write_text("template,label,rationale\n" + "".join(
        f"{subject},{label},{writer.typed(words['rationale'] + ' ' + words['culture'])}\n" for subject, label in labels), encoding="utf-8")
    with (EXAMPLE / "groups.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    with (team / "groups.csv").open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(
            rows[:1] + [row[:3] + [writer.typed(writer.write(cell)) for cell in row[3:6]] + [row[6]] for row in rows[1:]])
    pipeline = team / "pipeline.toml"
    pipeline.write_text(f'''profile = "sy/sy.toml"
[labels]
bbq = "{EXAMPLE / 'bbq'}"
consensus = "consensus.csv"
[translation]
cache = "{EXAMPLE / 'translation' / 'translation_cache.sqlite'}"
returned = "returned"
[templates]
groups = "groups.csv"
''', encoding="utf-8")
    return pipeline


def post_edit(sent: Path, returned: Path, writer: Writer) -> int:
    """The translator's work: each exported workbook's Post-edit cells as the Japanese example's translator wrote
    them, in the culture's writing (the version exchanges included); returns the number of cells written."""
    returned.mkdir(parents=True, exist_ok=True)
    written = 0
    for path in sorted(sent.glob("*.xlsx")):
        japanese = {(r[0], r[1], r[5]): r[8] for r in load_workbook(EXAMPLE / "translation" / "returned" / path.name,
                                                                    read_only=True)["templates"].iter_rows(
            min_row=2, values_only=True)}
        book = load_workbook(path)
        for row in book["templates"].iter_rows(min_row=2):
            text = japanese.get((row[0].value, row[1].value, row[5].value))
            if row[5].value == FOLLOWS and writer.culture.marks_exchanges and (row[2].value, row[3].value) in EXCHANGED:
                row[8].value = PARTNER[row[1].value]
            elif text is not None:
                row[8].value = writer.typed(writer.write(str(text)))
                written += 1
        book.save(returned / path.name)
    return written
