"""The audit report's charts: marks placed where their numbers say, the rule's cut-offs where the rule puts
them, every mark's numbers in its hover text, and the same bytes for the same release."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from core.decisions import Decision
from core.paths import EXAMPLE_TEMPLATES
from tasks.audit.charts import (LABEL_WIDTH, PLOT_WIDTH, QuestionVotes, count_axis, funnel_chart, samples_chart,
                                share_chart, type1_chart)
from tasks.audit.report import FunnelRow
from offline import remote_loads
from test_release import build_into


def row(category: str, templates: int, released: int, drops: dict[str, int], samples: int = 0,
        paper: int | None = None) -> FunnelRow:
    return FunnelRow(category, category, None, None, templates, drops, released, 0, samples, None, None, paper)


def x_of(value: float, high: float) -> float:
    return LABEL_WIDTH + PLOT_WIDTH * value / high


def test_funnel_bars_split_each_category_by_what_became_of_its_templates():
    rules = ["survey: type2-two-thirds", "survey: reading-comprehension"]
    chart = funnel_chart([row("Age", 20, 12, {rules[0]: 5, rules[1]: 1}), row("SES", 8, 8, {})], rules)
    age = [m for m in chart.marks if m.kind == "rect" and m.tip.startswith("Age")]
    assert [m.tip for m in age] == ["Age: 12 of 20 templates in the release",
                                    "Age: 5 of 20 templates dropped by survey: type2-two-thirds",
                                    "Age: 1 of 20 templates dropped by survey: reading-comprehension",
                                    "Age: 2 of 20 templates not in the release, no drop decision"]
    assert [m.css for m in age] == ["kept", "drop0", "drop1", "absent"]
    high, ticks = count_axis(20)
    assert (high, ticks) == (20, [0, 5, 10, 15, 20])
    assert age[0].x == LABEL_WIDTH and age[0].width == pytest.approx(PLOT_WIDTH * 12 / 20)
    assert age[-1].x + age[-1].width == pytest.approx(x_of(20, 20))  # the bar is the category's 20 templates
    assert any(m.kind == "text" and m.text == "8 of 8 kept" for m in chart.marks)
    assert [label for label, _, _ in chart.rows] == ["Age", "SES"]


def test_samples_bars_stand_beside_the_papers_and_mark_a_difference():
    chart = samples_chart([row("Religion", 20, 20, {}, samples=712, paper=688), row("New", 3, 3, {}, samples=96)])
    bars = {m.tip: m for m in chart.marks if m.kind == "rect"}
    high, _ = count_axis(712)
    assert bars["Religion: 712 samples in this release"].width == pytest.approx(PLOT_WIDTH * 712 / high)
    assert bars["Religion: 688 samples in the paper"].width == pytest.approx(PLOT_WIDTH * 688 / high)
    notes = {m.text: m.css for m in chart.marks if m.kind == "text"}
    assert notes == {"712 / paper 688": "note differs", "96 / paper -": "note"}


def type1_decision(question: str, equal: Fraction, outcome: str = "keep") -> Decision:
    return Decision("survey", "stereotype", f"stereotype:Religion:{question}", "type1-target-non-target", outcome,
                    "equal share ...", {"question_id": question, "equal_share": str(equal),
                                        "target_cut": str(2 * equal), "non_target_cut": str(equal / 2)})


def test_type1_dots_sit_at_votes_over_the_equal_share_against_2x_and_half(ko_profile):
    equal = Fraction(25, 2)  # 100 respondents / 8 options
    votes = QuestionVotes("q1", "Religion", "헌금을 강요함", {"A": 25, "B": 6, "C": 7, "D": 0})
    chart = type1_chart([votes, QuestionVotes("q2", "Religion", "dropped one", {"Z": 10})],
                        [type1_decision("q1", equal), type1_decision("q2", equal, "drop")], ko_profile)
    dots = {m.tip.split(":")[0]: m for m in chart.marks if m.kind == "dot"}
    lines = {m.text: m.x for m in chart.marks if m.kind == "vline"}
    assert dots["A"].x == pytest.approx(lines["2x: target"]) and dots["A"].css == "target"  # 25 = 2 x 12.5
    assert dots["B"].css == "nontarget" and dots["B"].x < lines["1/2x: non-target"]  # 6 <= 6.25
    assert dots["C"].css == "neither" and lines["1/2x: non-target"] < dots["C"].x < lines["2x: target"]
    assert dots["D"].x == LABEL_WIDTH  # no vote: the left edge (the axis starts at 1/16)
    assert dots["A"].tip == "A: 25 votes, 2.00x the equal share of 12.50 votes: target"
    assert lines["2x: target"] - lines["1/2x: non-target"] == pytest.approx(PLOT_WIDTH * 2 / 8)  # 2 of 8 octaves
    assert [(label, css) for label, _, css in chart.rows] == [("헌금을 강요함", ""), ("✗ dropped one", "dropped")]


def test_share_charts_put_each_question_at_its_share_against_the_profiles_cut(ko_profile):
    decisions = [
        Decision("survey", "stereotype", "stereotype:Age:고집", "no-stereotype-majority", "keep", "r",
                 {"question_id": "a", "no_stereotype": 15, "respondents": 100, "share": "3/20"}),
        Decision("survey", "stereotype", "stereotype:SES:게으름", "no-stereotype-majority", "drop", "r",
                 {"question_id": "b", "no_stereotype": 55, "respondents": 100, "share": "11/20"}),
        Decision("survey", "stereotype", "stereotype:Age:고집", "type2-two-thirds", "drop", "r",
                 {"question_id": "a", "target": "노인", "target_votes": 55, "other_votes": 30, "target_share": "11/17"})]
    no_stereotype = share_chart(decisions, ko_profile, "no-stereotype-majority")
    assert no_stereotype.title == "Every surveyed stereotype: the 'no stereotype' share against 50%"
    dots = [m for m in no_stereotype.marks if m.kind == "dot"]
    assert [m.x for m in dots] == pytest.approx([x_of(0.15, 1), x_of(0.55, 1)])
    assert [m.css for m in dots] == ["keepdot", "dropdot"]
    assert dots[1].tip == "게으름: 55 of 100 chose 'no stereotype' (55.0%): dropped"
    assert [m.x for m in no_stereotype.marks if m.kind == "vline"] == [x_of(0.5, 1)]
    two_thirds = share_chart(decisions, ko_profile, "type2-two-thirds")
    assert [m.x for m in two_thirds.marks if m.kind == "vline"] == pytest.approx([x_of(2 / 3, 1)])
    assert [m.tip for m in two_thirds.marks if m.kind == "dot"] == ["고집: 노인 got 55 of 85 votes for a group (64.7%): dropped"]
    assert share_chart([], ko_profile, "type2-two-thirds") is None


def test_the_report_draws_its_charts_inline_and_the_same_bytes_twice(tmp_path, ko_profile):
    first, second = tmp_path / "a" / "KoBBQ", tmp_path / "b" / "KoBBQ"
    for folder in (first, second):
        build_into(folder, EXAMPLE_TEMPLATES, ko_profile)
    html = (first / "audit.html").read_text(encoding="utf-8")
    assert (second / "audit.html").read_bytes() == html.encode()
    figures = re.findall(r'<figure class="chart" id="([\w-]+)">\s*<svg xmlns="http://www.w3.org/2000/svg"', html)
    assert figures == ["chart-funnel", "chart-samples"]  # no survey in this build: no survey charts
    assert re.findall(r"<(?:rect|circle) [^>]*>(?!<title>)", html) == []  # every mark has its numbers on hover
    assert len(re.findall(r"<rect [^>]*><title>", html)) >= 12 and "template IDs</text>" in html
    assert "samples</text>" in html and "category</text>" in html  # axis labels
    assert remote_loads(html) == []
    assert "<h2 id=\"funnel\">" in html and "Paper samples</th>" in html  # the tables stay
