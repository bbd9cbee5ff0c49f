"""The audit report's charts: marks placed where their numbers say, the rule's cut-offs where the rule puts
them, and the same bytes for the same release."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from core.decisions import Decision
from core.paths import EXAMPLE_TEMPLATES
from tasks.audit.charts import (ABSENT, DROPS, KEPT, OUTCOMES, ROLES, QuestionVotes, funnel_chart, samples_chart,
                                share_chart, type1_chart)
from tasks.audit.report import FunnelRow
from offline import remote_loads
from test_release import build_into


def row(category: str, templates: int, released: int, drops: dict[str, int], samples: int = 0,
        paper: int | None = None) -> FunnelRow:
    return FunnelRow(category, category, None, None, templates, drops, released, 0, samples, None, None, paper)


def to_hex(colour) -> str:
    """Matplotlib's hex spelling of a colour (imported here, when a chart is read, not when every pytest worker
    collects this file)."""
    from matplotlib.colors import to_hex as hex_of

    return hex_of(colour)


def bars(figure) -> list[tuple[float, float, float, str]]:
    """Each bar drawn: (row, left, width, colour); bars of no width included (a rule that dropped none)."""
    return [(round(p.get_y() + p.get_height() / 2, 2), p.get_x(), p.get_width(), to_hex(p.get_facecolor()))
            for p in figure.axes[0].patches]


def dots(figure) -> list[tuple[float, float, str]]:
    """Each dot drawn: (x, row, colour), in the order drawn (a collection's colours cycle over its dots)."""
    return [(float(x), float(y), to_hex(colours[index % len(colours)]))
            for collection in figure.axes[0].collections for colours in [collection.get_facecolors()]
            for index, (x, y) in enumerate(collection.get_offsets())]


def notes(figure) -> dict[str, str]:
    return {text.get_text(): to_hex(text.get_color()) for text in figure.axes[0].texts}


def cut_lines(figure) -> list[float]:
    return [float(line.get_xdata()[0]) for line in figure.axes[0].lines]


def rows(figure) -> list[str]:
    return [label.get_text() for label in figure.axes[0].get_yticklabels()]


def test_funnel_bars_split_each_category_by_what_became_of_its_templates():
    rules = ["survey: type2-two-thirds", "survey: reading-comprehension"]
    chart = funnel_chart([row("Age", 20, 12, {rules[0]: 5, rules[1]: 1}), row("SES", 8, 8, {})], rules)
    age = [bar for bar in bars(chart) if bar[0] == 0]
    assert [(left, width, colour) for _, left, width, colour in age] == [
        (0, 12, KEPT), (12, 5, DROPS[0]), (17, 1, DROPS[1]), (18, 2, ABSENT)]  # the bar is the category's 20
    assert [bar[2] for bar in bars(chart) if bar[0] == 1] == [8, 0, 0, 0]
    assert set(notes(chart)) == {"12 of 20 kept", "8 of 8 kept"}
    assert rows(chart) == ["Age", "SES"]
    legend = [text.get_text() for text in chart.axes[0].get_legend().get_texts()]
    assert legend == ["in the release", f"dropped by {rules[0]}", f"dropped by {rules[1]}",
                      "not in the release, no drop decision"]


def test_samples_bars_stand_beside_the_papers_and_mark_a_difference():
    chart = samples_chart([row("Religion", 20, 20, {}, samples=712, paper=688), row("New", 3, 3, {}, samples=96)])
    assert [(width, colour) for _, _, width, colour in bars(chart)] == [
        (712, "#3b6ea5"), (688, "#b9c9dd"), (96, "#3b6ea5"), (0, "#b9c9dd")]
    found = notes(chart)
    assert set(found) == {"712 / paper 688", "96 / paper -"}
    assert found["712 / paper 688"] != found["96 / paper -"]  # the difference is highlighted


def type1_decision(question: str, equal: Fraction, outcome: str = "keep") -> Decision:
    return Decision("survey", "stereotype", f"stereotype:Religion:{question}", "type1-target-non-target", outcome,
                    "equal share ...", {"question_id": question, "equal_share": str(equal),
                                        "target_cut": str(2 * equal), "non_target_cut": str(equal / 2)})


def test_type1_dots_sit_at_votes_over_the_equal_share_against_2x_and_half(ko_profile):
    equal = Fraction(25, 2)  # 100 respondents / 8 options
    votes = QuestionVotes("q1", "Religion", "헌금을 강요함", {"A": 25, "B": 6, "C": 7, "D": 0})
    chart = type1_chart([votes, QuestionVotes("q2", "Religion", "dropped one", {"Z": 10})],
                        [type1_decision("q1", equal), type1_decision("q2", equal, "drop")], ko_profile)
    assert dots(chart) == [(2.0, 0, ROLES["target"]), (6 / 12.5, 0, ROLES["non-target"]),
                           (7 / 12.5, 0, ROLES["neither"]), (1 / 16, 0, ROLES["non-target"]),  # no vote: left edge
                           (10 / 12.5, 1, ROLES["neither"])]
    assert cut_lines(chart) == [0.5, 2.0]
    assert set(notes(chart)) == {"1/2x: non-target", "2x: target"}
    assert chart.axes[0].get_xscale() == "log" and chart.axes[0].get_xlim() == (1 / 16, 16)
    assert rows(chart) == ["헌금을 강요함", "✗ dropped one"]
    assert [to_hex(label.get_color()) for label in chart.axes[0].get_yticklabels()][1] == "#aa1122"


def test_share_charts_put_each_question_at_its_share_against_the_profiles_cut(ko_profile):
    decisions = [
        Decision("survey", "stereotype", "stereotype:Age:고집", "no-stereotype-majority", "keep", "r",
                 {"question_id": "a", "no_stereotype": 15, "respondents": 100, "share": "3/20"}),
        Decision("survey", "stereotype", "stereotype:SES:게으름", "no-stereotype-majority", "drop", "r",
                 {"question_id": "b", "no_stereotype": 55, "respondents": 100, "share": "11/20"}),
        Decision("survey", "stereotype", "stereotype:Age:고집", "type2-two-thirds", "drop", "r",
                 {"question_id": "a", "target": "노인", "target_votes": 55, "other_votes": 30, "target_share": "11/17"})]
    no_stereotype = share_chart(decisions, ko_profile, "no-stereotype-majority")
    assert no_stereotype.axes[0].get_title() == "Every surveyed stereotype: the 'no stereotype' share against 50%"
    assert [(x, colour) for x, _, colour in dots(no_stereotype)] == [(0.15, OUTCOMES["kept"]),
                                                                    (0.55, OUTCOMES["dropped"])]
    assert cut_lines(no_stereotype) == [0.5]
    assert rows(no_stereotype) == [c.display for c in ko_profile.categories if c.name in ("Age", "SES")]
    two_thirds = share_chart(decisions, ko_profile, "type2-two-thirds")
    assert cut_lines(two_thirds) == pytest.approx([2 / 3])
    assert [(x, colour) for x, _, colour in dots(two_thirds)] == [(pytest.approx(55 / 85), OUTCOMES["dropped"])]
    assert share_chart([], ko_profile, "type2-two-thirds") is None


def test_the_report_draws_its_charts_inline_and_the_same_bytes_twice(tmp_path, ko_profile):
    first, second = tmp_path / "a" / "KoBBQ", tmp_path / "b" / "KoBBQ"
    for folder in (first, second):
        build_into(folder, EXAMPLE_TEMPLATES, ko_profile)
    html = (first / "audit.html").read_text(encoding="utf-8")
    assert (second / "audit.html").read_bytes() == html.encode()
    figures = re.findall(r'<figure class="chart" id="([\w-]+)"><svg ', html)
    assert figures == ["chart-funnel", "chart-samples"]  # no survey in this build: no survey charts
    assert "<?xml" not in html and "<dc:date>" not in html  # inline, with no date
    assert ">template IDs</text>" in html and ">Age</text>" in html  # text stays text, found by the browser
    assert remote_loads(html) == []
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) > 100 and [i for i in set(ids) if ids.count(i) > 1] == []  # several SVGs, one page: unique ids
    assert "<h2 id=\"funnel\">" in html and "Paper samples</th>" in html  # the tables stay

