"""The audit report's charts, as inline SVG drawn from the numbers its tables show.

Hand-written SVG (``templates/charts.html.j2`` draws a ``Chart``) rather than matplotlib: every chart
here is horizontal bars or dots on one axis, about a page of code; the report stays one offline file
whose bytes depend only on the release (matplotlib's SVG carries a random hash salt, a date and glyph
outlines that would have to be pinned), every mark carries its numbers in a ``<title>`` the browser
shows on hover, and text stays text (Korean included), found by the browser's own search.

Each function turns rows of the report (the funnel) or decisions of the log (the survey rules' numbers)
into a ``Chart``: rows top to bottom, marks placed in pixels, ticks, threshold lines and a legend.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from core.decisions import Decision
from core.profile import Profile
from tasks.survey.rules import RULE_NO_STEREOTYPE, RULE_TYPE1, RULE_TYPE2

LABEL_WIDTH = 250  # row labels, left of the plot
PLOT_WIDTH = 600
NOTE_WIDTH = 170  # numbers beside the bars, right of the plot
TOP = 44  # title and threshold labels
BOTTOM = 50  # ticks and the axis label
LABEL_CHARS = 34  # longer row labels are cut (the full text is in the row's <title>)
DROP_COLOURS = 6  # drop rules cycle through this many colours (css drop0 ... drop5)
RATIO_RANGE = (Fraction(1, 16), Fraction(16))  # the type-1 chart's axis: votes / equal share, log scale


@dataclass(frozen=True)
class Mark:
    kind: str  # "rect", "dot", "vline" (across the plot, labelled on top), "hline" (x to x + width) or "text"
    x: float
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0
    css: str = ""
    tip: str = ""  # shown on hover (<title>)
    text: str = ""


@dataclass(frozen=True)
class Chart:
    key: str  # the element id
    title: str
    x_label: str
    y_label: str
    rows: list[tuple[str, str, str]]  # per row, top to bottom: label, hover text, css
    row_height: int
    marks: list[Mark]
    ticks: list[tuple[float, str]]  # x in pixels, label
    legend: list[tuple[str, str]] = field(default_factory=list)  # css, label
    note: str = ""  # how to read it, one sentence under the chart

    @property
    def width(self) -> int:
        return LABEL_WIDTH + PLOT_WIDTH + NOTE_WIDTH

    @property
    def height(self) -> int:
        return TOP + len(self.rows) * self.row_height + BOTTOM

    @property
    def plot_left(self) -> int:
        return LABEL_WIDTH

    @property
    def plot_width(self) -> int:
        return PLOT_WIDTH

    @property
    def plot_bottom(self) -> int:
        return TOP + len(self.rows) * self.row_height

    def row_top(self, index: int) -> int:
        return TOP + index * self.row_height


def linear(high: float) -> Callable[[float], float]:
    """0 .. high onto the plot's width."""
    return lambda value: LABEL_WIDTH + PLOT_WIDTH * (value / high if high else 0.0)


def log_ratio(low: Fraction, high: Fraction) -> Callable[[float], float]:
    """low .. high on a log scale onto the plot's width (values outside are drawn at the edge)."""
    span = math.log2(high / low)
    return lambda value: LABEL_WIDTH + PLOT_WIDTH * (math.log2(min(max(value, low), high) / low) / span)


def short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def count_axis(maximum: int) -> tuple[int, list[int]]:
    """An axis for counts up to ``maximum``: its end and ticks, at most six, a step of 1, 2 or 5 times a
    power of ten (whole numbers only)."""
    wanted = max(maximum, 1) / 5
    power = 10 ** max(int(math.floor(math.log10(wanted))), 0) if wanted >= 1 else 1
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= wanted)
    high = max(math.ceil(maximum / step), 1) * step
    return high, list(range(0, high + 1, step))


def count_ticks(ticks: list[int], scale: Callable[[float], float]) -> list[tuple[float, str]]:
    return [(scale(value), f"{value:,}") for value in ticks]


# --- the funnel -----------------------------------------------------------------------------------

def funnel_chart(funnel: list, rules: list[str]) -> Chart:
    """Per category, the templates in the log as one bar: in the release, dropped by each rule, neither."""
    row_height = 26
    high, ticks = count_axis(max((row.templates for row in funnel), default=0))
    scale = linear(high)
    colour = {rule: f"drop{i % DROP_COLOURS}" for i, rule in enumerate(rules)}
    marks, rows = [], []
    for index, row in enumerate(funnel):
        top = TOP + index * row_height + 4
        absent = row.templates - row.released - sum(row.drops.values())
        parts = [("kept", row.released, "in the release")]
        parts += [(colour[rule], row.drops.get(rule, 0), f"dropped by {rule}") for rule in rules]
        parts += [("absent", absent, "not in the release, no drop decision")]
        start = 0
        for css, count, what in parts:
            if count > 0:
                marks.append(Mark("rect", scale(start), top, scale(start + count) - scale(start), row_height - 8,
                                  css, f"{row.display}: {count} of {row.templates} templates {what}"))
            start += count
        marks.append(Mark("text", scale(start) + 6, top + row_height / 2, css="note",
                          text=f"{row.released} of {row.templates} kept"))
        rows.append((row.display, f"{row.display}: {row.templates} templates in the log, {row.released} released", ""))
    legend = [("kept", "in the release")] + [(colour[r], f"dropped by {r}") for r in rules]
    if any(r.templates - r.released - sum(r.drops.values()) for r in funnel):
        legend.append(("absent", "not in the release, no drop decision"))
    return Chart("chart-funnel", "Templates per category: kept, and dropped by each rule", "template IDs",
                 "category", rows, row_height, marks, count_ticks(ticks, scale), legend,
                 "Each bar is a category's templates in the decision log, split by what became of them.")


def samples_chart(funnel: list) -> Chart:
    """Samples per category, this release's beside the paper's."""
    row_height = 30
    high, ticks = count_axis(max([row.samples for row in funnel] + [row.paper_samples or 0 for row in funnel],
                                 default=0))
    scale = linear(high)
    marks, rows = [], []
    for index, row in enumerate(funnel):
        top = TOP + index * row_height + 3
        half = (row_height - 6) / 2
        if row.samples:  # a bar of no width would be a mark no one can point at; the number is beside
            marks.append(Mark("rect", scale(0), top, scale(row.samples) - scale(0), half - 1, "ours",
                              f"{row.display}: {row.samples:,} samples in this release"))
        paper = "-" if row.paper_samples is None else f"{row.paper_samples:,}"
        if row.paper_samples:
            marks.append(Mark("rect", scale(0), top + half, scale(row.paper_samples) - scale(0), half - 1, "paper",
                              f"{row.display}: {row.paper_samples:,} samples in the paper"))
        differs = row.paper_samples is not None and row.paper_samples != row.samples
        marks.append(Mark("text", scale(max(row.samples, row.paper_samples or 0)) + 6, top + row_height / 2 - 3,
                          css="note differs" if differs else "note", text=f"{row.samples:,} / paper {paper}"))
        rows.append((row.display, f"{row.display}: {row.samples:,} samples; paper {paper}", ""))
    return Chart("chart-samples", "Samples per category against the paper", "samples", "category", rows, row_height,
                 marks, count_ticks(ticks, scale), [("ours", "this release"), ("paper", "the paper")],
                 "Numbers beside each pair: this release / the paper (highlighted where they differ).")


# --- the survey rules ------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuestionVotes:
    question_id: str
    category: str
    stereotype: str
    votes: dict[str, int]  # group -> votes, questionnaire order


def parse_votes(text: str) -> list[QuestionVotes]:
    """``survey_votes.csv``'s text (``tasks.survey.votes``): the type-1 questions' votes per group (none without it)."""
    questions: dict[str, QuestionVotes] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["survey_type"] != "1":
            continue
        entry = questions.setdefault(row["question_id"], QuestionVotes(row["question_id"], row["category"],
                                                                       row["stereotype"], {}))
        entry.votes[row["group"]] = int(row["votes"])
    return list(questions.values())


def _by_question(decisions: Iterable[Decision], rule: str) -> dict[str, Decision]:
    return {str(d.numbers.get("question_id")): d for d in decisions
            if d.subject_type == "stereotype" and d.rule == rule and d.numbers.get("question_id")}


def _category(subject: str) -> str:
    return subject.split(":", 2)[1]


def type1_chart(questions: list[QuestionVotes], decisions: list[Decision], profile: Profile) -> Chart | None:
    """Every type-1 question, one row: each group's votes as a multiple of the equal share, against the
    target (2x) and non-target (0.5x) cut-offs of the rule (log scale: 2x and 0.5x sit symmetrically)."""
    rule = _by_question(decisions, RULE_TYPE1)
    order = {name: index for index, name in enumerate(profile.category_names)}
    judged = sorted((q for q in questions if q.question_id in rule), key=lambda q: order.get(q.category, len(order)))
    if not judged:
        return None
    row_height = 18
    scale = log_ratio(*RATIO_RANGE)
    display = {c.name: c.display for c in profile.categories}
    marks, rows = [], []
    for index, question in enumerate(judged):
        decision = rule[question.question_id]
        equal = Fraction(str(decision.numbers["equal_share"]))
        target_cut = Fraction(str(decision.numbers["target_cut"]))
        non_target_cut = Fraction(str(decision.numbers["non_target_cut"]))
        centre = TOP + index * row_height + row_height / 2
        marks.append(Mark("hline", scale(RATIO_RANGE[0]), centre, scale(RATIO_RANGE[1]) - scale(RATIO_RANGE[0]),
                          css="guide"))
        for group, votes in question.votes.items():
            role = "target" if votes >= target_cut else "non-target" if votes <= non_target_cut else "neither"
            ratio = Fraction(votes) / equal
            marks.append(Mark("dot", scale(ratio), centre, css=role.replace("-", ""),
                              tip=f"{group}: {votes} votes, {float(ratio):.2f}x the equal share of {float(equal):.2f} "
                                  f"votes: {role}"))
        outcome = "dropped" if decision.outcome == "drop" else "kept"
        rows.append((f"{'✗ ' if outcome == 'dropped' else ''}{short(question.stereotype)}",
                     f"{display.get(question.category, question.category)}: {question.stereotype} ({outcome}"
                     f"{', override' if decision.override else ''}): {decision.reason}",
                     "dropped" if outcome == "dropped" else ""))
    survey = profile.survey
    thresholds = [Mark("vline", scale(survey.non_target_ratio), css="threshold",
                       text=f"{_ratio(survey.non_target_ratio)}x: non-target"),
                  Mark("vline", scale(survey.target_ratio), css="threshold", text=f"{_ratio(survey.target_ratio)}x: target")]
    ticks = [(scale(Fraction(2) ** k), _ratio(Fraction(2) ** k)) for k in range(-4, 5)]
    return Chart("chart-type1", "Type-1 questions: every group's votes against the target and non-target cut-offs",
                 "votes / equal share (log scale)", "type-1 question", rows, row_height, thresholds + marks, ticks,
                 [("target", f"target (>= {_ratio(survey.target_ratio)}x)"),
                  ("nontarget", f"non-target (<= {_ratio(survey.non_target_ratio)}x)"), ("neither", "neither")],
                 "One row per question (✗: dropped by the rule, which needs a target and a non-target); "
                 "groups with no vote sit at the left edge.")


def _ratio(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


def share_chart(decisions: list[Decision], profile: Profile, rule: str) -> Chart | None:
    """One row per category, one dot per question: the share a rule judges, against its cut-off.
    ``RULE_TYPE2``: the intended target's share of the votes for a group (kept above 2/3);
    ``RULE_NO_STEREOTYPE``: the share of respondents answering "no stereotype" (dropped above 1/2)."""
    found = [d for d in decisions if d.subject_type == "stereotype" and d.rule == rule]
    if not found:
        return None
    two_thirds = rule == RULE_TYPE2
    cut = profile.survey.type2_agreement if two_thirds else profile.survey.no_stereotype_max
    order = [c.name for c in profile.categories if any(_category(d.subject) == c.name for d in found)]
    order += sorted({_category(d.subject) for d in found} - set(order))
    display = {c.name: c.display for c in profile.categories}
    row_height = 26
    scale = linear(1.0)
    marks = [Mark("vline", scale(float(cut)), css="threshold",
                  text=f"{_ratio(cut)}: {'kept above' if two_thirds else 'dropped above'}")]
    rows = []
    for index, category in enumerate(order):
        centre = TOP + index * row_height + row_height / 2
        in_row = [d for d in found if _category(d.subject) == category]
        for position, decision in enumerate(in_row):
            numbers = decision.numbers
            share = Fraction(str(numbers["target_share"] if two_thirds else numbers["share"]))
            text = decision.subject.split(":", 2)[2]
            what = (f"{numbers['target']} got {numbers['target_votes']} of "
                    f"{int(numbers['target_votes']) + int(numbers['other_votes'])} votes for a group"
                    if two_thirds else f"{numbers['no_stereotype']} of {numbers['respondents']} chose 'no stereotype'")
            outcome = "dropped" if decision.outcome == "drop" else "kept"
            marks.append(Mark("dot", scale(float(share)), centre + (position % 3 - 1) * 5,
                              css="dropdot" if outcome == "dropped" else "keepdot",
                              tip=f"{text}: {what} ({float(share):.1%}): {outcome}"
                                  f"{' (override)' if decision.override else ''}"))
        dropped = sum(d.outcome == "drop" for d in in_row)
        rows.append((display.get(category, category), f"{display.get(category, category)}: {len(in_row)} judged, "
                     f"{dropped} dropped", ""))
    ticks = [(scale(i / 4), f"{i * 25}%") for i in range(5)]
    if two_thirds:
        return Chart("chart-type2", f"Type-2 questions: the intended target's share of the votes against {_ratio(cut)}",
                     "target's share of the votes for a group", "category", rows, row_height, marks, ticks,
                     [("keepdot", "kept"), ("dropdot", "dropped")],
                     "One dot per question and intended target; a question is kept when its dot is right of the line.")
    return Chart("chart-nostereotype", f"Every surveyed stereotype: the 'no stereotype' share against {float(cut):.0%}",
                 "share of respondents answering 'no stereotype'", "category", rows, row_height, marks, ticks,
                 [("keepdot", "kept"), ("dropdot", "dropped")],
                 "One dot per question; a question is dropped when its dot is right of the line.")


def audit_charts(funnel: list, rules: list[str], votes: list[QuestionVotes], decisions: list[Decision],
                 profile: Profile) -> dict[str, Chart | None]:
    """The report's charts by name; a survey chart is None when the release had no survey."""
    return {"funnel": funnel_chart(funnel, rules), "samples": samples_chart(funnel),
            "type1": type1_chart(votes, decisions, profile),
            "type2": share_chart(decisions, profile, RULE_TYPE2),
            "no_stereotype": share_chart(decisions, profile, RULE_NO_STEREOTYPE)}
