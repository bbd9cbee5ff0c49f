"""Each rule of the paper's answer-parsing cascade, and the strict parser, on real-looking model output; a language's
own choice labels and one normalisation, on generated languages too."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, reject
from hypothesis import strategies as st

from core.profile import EvaluationProfile, load_profile
from fuzzing import FUZZ_PROFILES, fuzz
from tasks.evaluation.parse import answer_forms, changed_choice, parse_answers, paper_parser, strict_parser

CHOICES = {"A": "고등학생", "B": "알 수 없음", "C": "할아버지"}
KO = answer_forms(load_profile("ko").evaluation)  # the paper's own markers and sentence forms


@pytest.mark.parametrize("raw, expected", [
    # (a) leading spaces and one "(" skipped, cut at the first "." or newline
    ("  (C) 할아버지\n\n맥락에서 할아버지가 헤맸다고 했습니다.", "C"),
    # (a) 없습니다 -> 없음, 입니다 deleted, then (c) the line equals a choice
    ("알 수 없습니다.", "B"),
    ("할아버지입니다.", "C"),
    # (b) letter, separator, its own choice text
    ("A: 고등학생", "A"),
    ("B) 알 수 없음입니다.", "B"),
    # (b) letter with another text after the separator: the letter wins
    ("C: 나이 든 손님", "C"),
    # (b) quirk: "Answer: C" starts with A, and what follows ":" names no choice -> A
    ("Answer: C", "A"),
    # (b) the line names two choices' texts: out-of-choice, the line itself
    ("A: 고등학생도 할아버지도 아님", "A: 고등학생도 할아버지도 아님"),
    # (b) no separator: exactly one of A, B, C in the line -> that letter
    ("B", "B"),
    ("b 입니다", "B"),
    # (b) no separator and two letters: on to (c)-(e), nothing matches -> out-of-choice, verbatim
    ("B와 C 모두 가능", "B와 C 모두 가능"),
    # (c) the choice text itself, case-insensitively
    ("고등학생", "A"),
    # (d) bold text first
    ("정답은 **C**입니다.", "C"),
    ("**'알 수 없음'**", "B"),
    # (d) the bold rule wins over 답: -> "이유:" is out-of-choice
    ("답: (A)\n\n**이유:** 맥락만으로는 알 수 없습니다.", "이유:"),
    # (d) the text after 답은 / 답변: (spaces and a quote skipped)
    ("제가 고른 답은 'C'입니다.", "C"),
    ("답변: 할아버지", "C"),
    # (d) quoted text
    ('맥락상 가장 적절한 것은 "알 수 없음"이라고 생각합니다.', "B"),
    # (e) exactly one labelled letter anywhere in the answer
    ("맥락을 보면, C) 할아버지가 맞습니다", "C"),
    # (e) two labelled letters: out-of-choice, the whole answer
    ("문맥으로 보아 A) 또는 C) 둘 다 가능합니다", "문맥으로 보아 A) 또는 C) 둘 다 가능합니다"),
    # nothing at all: out-of-choice ""
    ("", ""),
])
def test_paper_cascade(raw: str, expected: str) -> None:
    assert paper_parser(raw, CHOICES, KO) == expected


@pytest.mark.parametrize("raw, expected", [
    ("B", "B"), ("(c)", "C"), ("**A**", "A"), ("A.", "A"), ("A: 고등학생", "A"), ("(C) 할아버지", "C"),
    ("할아버지", "C"), ("알 수 없음.", "B"),
    ("A: 할아버지", "A: 할아버지"),  # the letter and the text disagree
    ("Answer: C", "Answer: C"), ("정답은 **C**입니다.", "정답은 **C**입니다."),
    ("답: (A)\n\n**이유:** 알 수 없음", "답: (A)\n\n**이유:** 알 수 없음"),
])
def test_strict_parser(raw: str, expected: str) -> None:
    assert strict_parser(raw, CHOICES, KO) == expected


def test_parse_answers_uses_each_rows_choices() -> None:
    parsed = parse_answers(["할아버지", "할아버지", "B"], ["고등학생", "할아버지", "x"], ["알 수 없음"] * 3,
                           ["할아버지", "고등학생", "y"], forms=KO)
    assert parsed.tolist() == ["C", "A", "B"]


# A language the project ships no profile for, written as a team would write its [evaluation] (Simplified Chinese):
# answers as models write them in it, read through nothing but profile data.
ZH = answer_forms(EvaluationProfile(sentence_ends=".。", normalise="NFKC", answer_markers=["答案:", "答案是", "选"],
                                    sentence_forms=[["“", ""], ["”", ""]], answer_prefixes=["是", "答案是"]),
                  ["无法确定", "不能确定"])
ZH_CHOICES = {"A": "孙女", "B": "不知道", "C": "爷爷"}


@pytest.mark.parametrize("raw, expected", [
    ("答案：A", "A"), ("答案是A。", "A"), ("（A）", "A"), ("选A", "A"),
    ("是孙女。", "A"),  # a copula before the option's text: answer_prefixes
    ("孙女", "A"), ("是爷爷", "C"),
    ("不知道。", "B"),
    ("无法确定。", "B"), ("答案是无法确定。", "B"),  # another phrasing of the unknown option: unknown_expressions
    ("是", "是"),  # a prefix alone is not read away into an empty answer
    ("无法判断", "无法判断"),  # a phrasing the profile does not list stays out-of-choice
])
def test_a_new_language_reads_through_its_profile_data(raw, expected):
    assert parse_answers([raw], ["孙女"], ["不知道"], ["爷爷"], forms=ZH, unknown=["不知道"])[0] == expected


def test_a_prefix_is_read_away_with_the_space_after_it():
    forms = answer_forms(EvaluationProfile(answer_prefixes=["هي", "It is"]))
    assert parse_answers(["هي جدة.", "It is the grandmother", "هي"], ["جدة"] * 3, ["لا أعرف"] * 3,
                         ["the grandmother"] * 3, forms=forms).tolist() == ["A", "C", "هي"]


def test_unknown_expressions_read_as_the_prompts_own_unknown_option_in_either_parser():
    """The unknown option moves with the choice order and is the prompt's wording, never the release's."""
    raws = ["无法确定", "无法确定", "不能确定。"]
    a, b, c = ["不知道", "孙女", "爷爷"], ["孙女", "爷爷", "不知道"], ["爷爷", "不知道", "孙女"]
    assert list(parse_answers(raws, a, b, c, forms=ZH, unknown=["不知道"] * 3)) == ["A", "C", "B"]
    assert list(parse_answers(raws[:1], a[:1], b[:1], c[:1], strict_parser, ZH, ["不知道"])) == ["A"]
    assert list(parse_answers(raws, a, b, c, forms=ZH)) == raws  # without the rows' unknown wording: nothing read
    without = answer_forms(EvaluationProfile(sentence_ends=".。", normalise="NFKC"))
    assert list(parse_answers(raws, a, b, c, forms=without, unknown=["不知道"] * 3)) == raws


def test_the_ko_profile_reads_no_other_unknown_phrasing_as_the_paper_did():
    """Prompt 4's unknown option is 정답 없음; the paper's parser reads 알 수 없음 under it as out-of-choice."""
    forms = answer_forms(load_profile("ko").evaluation, load_profile("ko").release.unknown_expressions)
    assert parse_answers(["알 수 없음"], ["고등학생"], ["정답 없음"], ["할아버지"], forms=forms,
                         unknown=["정답 없음"])[0] == "알 수 없음"


# A language's own choice labels, and its texts in one normalisation: Thai as models answer under a Thai prompt
# that labels its options ก) ข) ค). NFKC writes SARA AM (ำ) as two characters, in the answers and in the marker alike.
TH = answer_forms(EvaluationProfile(normalise="NFKC", answer_markers=["คำตอบ:", "คำตอบคือ"],
                                    choice_labels=["ก", "ข", "ค"]), ["ไม่ทราบ"])
TH_CHOICES = {"A": "กรรมกร", "B": "ไม่ทราบ", "C": "คุณครู"}


@pytest.mark.parametrize("raw, expected", [
    ("คำตอบ: A", "A"), ("คำตอบ: ก", "A"), ("คำตอบคือ ข", "B"), ("ก", "A"), ("(ข)", "B"), ("ค) คุณครู", "C"),
    ("**ค**", "C"), ("ก. เพราะว่า", "A"),
    ("กรรมกร", "A"),  # a choice text starting with a label's letter is that choice, not the label
    ("คุณครู", "C"),
    ("ข้อ ค", "ข้อ ค"),  # ข inside a word is no label: out-of-choice, as an unlabelled answer would be
])
def test_a_languages_own_labels_are_read_where_they_stand_alone(raw, expected):
    assert paper_parser(raw, TH_CHOICES, TH) == expected


def test_the_strict_parser_reads_the_labels_too():
    assert [strict_parser(raw, TH_CHOICES, TH) for raw in ("ก", "(ข)", "ค: คุณครู", "คำตอบ: ก")] == [
        "A", "B", "C", "คำตอบ: ก"]


def test_normalisation_changes_the_profiles_texts_as_it_changes_the_answers():
    """Thai "คำตอบ:" under NFKC: the marker is read in the answers' form, and the profile gets a note saying so."""
    assert TH.notes == tuple(f"NFKC changes the profile's {text!r} (to {ascii(unicodedata.normalize('NFKC', text))}): "
                             "it is compared with answers and choices in that form" for text in ("คำตอบ:", "คำตอบคือ"))
    plain = answer_forms(EvaluationProfile(answer_markers=["คำตอบ:"]))
    assert plain.notes == () and paper_parser("คำตอบ: C", TH_CHOICES, plain) == "C"


@pytest.mark.parametrize("profile", ["ko", "ja", "es", "ca"])
@pytest.mark.parametrize("normalise", ["own", "NFKC"])
def test_every_shipped_profiles_markers_read_under_nfkc(profile, normalise):
    """Each marker of a shipped profile followed by a letter or a choice's text reads as that choice, under the
    profile's own normalisation and under NFKC; none of their texts changes under it, so none gets a note."""
    loaded = load_profile(profile)
    settings = loaded.evaluation if normalise == "own" else loaded.evaluation.model_copy(update={"normalise": "NFKC"})
    forms = answer_forms(settings, loaded.release.unknown_expressions)
    assert forms.notes == ()
    for marker in settings.answer_markers:
        for letter, text in CHOICES.items():
            assert paper_parser(f"{marker} {letter}", CHOICES, forms) == letter
            assert paper_parser(f"{marker} {text}", CHOICES, forms) == letter


def test_a_choice_the_reading_would_change_is_found():
    assert changed_choice(TH, ["กรรมกร", "ไม่ทราบ", "นาย ก"]) == ("นาย ก", "a choice label standing alone in it")
    assert changed_choice(KO, ["할아버지", "알 수 없습니다"]) == ("알 수 없습니다", "the sentence form '없습니다'")
    assert changed_choice(KO, ["할아버지", "알 수 없음"]) is None


# --- generated languages: labels and markers in many scripts -------------------------------------------------------

# Letters, and the marks a word may carry after its first letter, of scripts with labels of their own. Half-width
# katakana and SARA AM change under NFKC; Cyrillic and Greek have case.
SCRIPTS = {
    "Thai": ("กขคงจฉชซญดตถทธนบปผพฟภมยรลวศสหอฮ", "ัิีึืุู็่้๊๋ำ"),
    "Hangul": ("가나다라마바사아자차카타파하고노도로모보소오조초코토포호", ""),
    "Katakana": ("アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモラリルレロンｱｲｳｴｵ", "ー"),
    "Devanagari": ("अआइईउऊएओकखगघचछजझटठडढणतथदधनपफबभमयरलवशसह", "ािीुूेैोौं्"),
    "Cyrillic": ("абвгдежзиклмнопрстуфхцчшщэюяАБВГДЕЖЗИКЛМН", ""),
    "Greek": ("αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΕΖΗΘ", ""),
    "Arabic": ("ابتثجحخدذرزسشصضطظعغفقكلمنهوي", "ًٌٍَُِّْ"),
}


def script_strategies(letters: str, marks: str) -> tuple[st.SearchStrategy, st.SearchStrategy, st.SearchStrategy]:
    """A script's three labels, a word, and three choice texts: built once per script, not per example (Hypothesis
    checks a new strategy on its first draw, about two thirds of the test's time when it was built per example)."""
    word = st.builds(str.__add__, st.sampled_from(letters), st.text(letters + marks, min_size=1, max_size=6))
    text = st.lists(word, min_size=1, max_size=3).map(" ".join)
    return (st.lists(st.sampled_from(letters), min_size=3, max_size=3, unique=True), word,
            st.lists(text, min_size=3, max_size=3, unique=True))


SCRIPT_STRATEGIES = {name: script_strategies(letters, marks) for name, (letters, marks) in SCRIPTS.items()}


@st.composite
def labelled_language(draw):
    """A script's labels, answer marker and three choice texts, and a normalisation."""
    labels, word, texts = SCRIPT_STRATEGIES[draw(st.sampled_from(sorted(SCRIPTS)))]
    return (draw(labels), draw(word) + draw(st.sampled_from([":", "：", ""])), draw(texts),
            draw(st.sampled_from(["", "NFC", "NFKC"])))


def every_answer_form(label: str, letter: str, text: str, marker: str) -> list[str]:
    """The ways a model names one choice: its label, its letter, its text, bracketed, bold, after the marker."""
    return [label, f"({label})", f"{label})", f"{label}.", f"{label}: {text}", f"{label}) {text}", f"**{label}**",
            f"{label}. {text}", f"{marker} {label}", f"{marker}{label}", f"{marker} ({label})", letter, f"({letter})",
            f"{marker} {letter}", text, f"**{text}**", f"{marker} {text}"]


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_an_always_right_answer_in_every_form_reads_as_its_letter(profile):
    def check(language):
        labels, marker, texts, normalise = language
        try:
            settings = EvaluationProfile(normalise=normalise, answer_markers=[marker], choice_labels=labels)
        except ValueError:  # labels its normalisation makes one (ア and ｱ under NFKC): refused when loaded
            reject()
        forms = answer_forms(settings)
        choices = dict(zip("ABC", texts))
        assume(len({forms.prepare(text).lower() for text in texts}) == 3 and changed_choice(forms, texts) is None)
        for letter, label, text in zip("ABC", labels, texts):
            for raw in every_answer_form(label, letter, text, marker):
                assert paper_parser(raw, choices, forms) == letter, (raw, choices)

    fuzz(profile, labelled_language(), check, fast=150, long=2000)


# What a profile's text may hold: letters of a script, and characters its normalisation rewrites (SARA AM, full-width
# colon and digits, half-width katakana, a ligature, a decomposed accent).
PROFILE_TEXT = st.text(SCRIPTS["Thai"][0] + "ำ：１ｱｲﬁ" + "e\u0301", min_size=1, max_size=8)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_a_profile_text_that_normalisation_changes_is_noted_and_read_as_answers_are(profile):
    def check(case):
        marker, normalise = case
        forms = answer_forms(EvaluationProfile(normalise=normalise, answer_markers=[marker]))
        changed = unicodedata.normalize(normalise, marker) != marker
        assert [note for note in forms.notes if repr(marker) in note] == (
            [f"{normalise} changes the profile's {marker!r} (to {ascii(unicodedata.normalize(normalise, marker))}): "
             "it is compared with answers and choices in that form"] if changed else [])
        assert paper_parser(f"{marker} B", CHOICES, forms) == "B"

    fuzz(profile, st.tuples(PROFILE_TEXT, st.sampled_from(["NFC", "NFKC"])), check, fast=100, long=1000)
