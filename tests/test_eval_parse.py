"""Each rule of the paper's answer-parsing cascade, and the strict parser, on real-looking model output."""

from __future__ import annotations

import pytest

from core.profile import EvaluationProfile, load_profile
from tasks.evaluation.parse import answer_forms, parse_answers, paper_parser, strict_parser

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
