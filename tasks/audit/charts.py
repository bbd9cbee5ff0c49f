"""The audit report's charts: matplotlib figures inline in ``audit.html`` as SVG, the same bytes run after run (a
fixed ``svg.hashsalt``, no date). Text stays text (``svg.fonttype = none``), so the browser draws Korean labels with
its own fonts and finds them with its search; matplotlib's warning that its font lacks Hangul is silenced.
"""

from __future__ import annotations

import csv
import io
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from core.decisions import Decision
from core.profile import Profile
from tasks.audit.fates import stereotype_text
from tasks.survey.rules import RULE_NO_STEREOTYPE, RULE_TYPE1, RULE_TYPE2

# matplotlib (~0.3 s to import): where a chart is drawn, or ahead (``import_library``); never by an up-to-date check.
if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SETTINGS = {"svg.fonttype": "none", "font.size": 9, "font.family": "sans-serif",
            "axes.spines.top": False, "axes.spines.right": False}
METADATA = {"svg": {"Date": None, "Creator": None}, "png": {"Software": None}}  # nothing of the time or version
LABEL_CHARS = 34  # longer row labels are cut
RATIO_RANGE = (Fraction(1, 16), Fraction(16))  # the type-1 chart's axis: votes / equal share, log scale
KEPT, ABSENT, OURS, PAPER = "#4c9a6a", "#c8c8c8", "#3b6ea5", "#b9c9dd"
DROPS = ("#d9534f", "#f0ad4e", "#8e6bbf", "#5bc0de", "#a0522d", "#e377c2")  # drop rules cycle through these
ROLES = {"target": "#d9534f", "non-target": "#3b6ea5", "neither": "#999999"}
OUTCOMES = {"kept": "#3b6ea5", "dropped": "#d9534f"}
DIFFERS = "#aa1122"


@dataclass(frozen=True)
class Chart:
    key: str  # the element id
    svg: str  # the figure as inline SVG
    note: str  # how to read it, one sentence under the chart


def import_library() -> None:
    """matplotlib's modules the charts use, imported ahead: the release stage's ``prepare`` calls this before the
    flow run, while the build waits for the checks' child's own import, rather than on the stage's path."""
    import matplotlib.backends.backend_svg  # noqa: F401
    import matplotlib.figure  # noqa: F401


def figure(rows: int, row_inches: float) -> tuple[Figure, Axes]:
    """A figure with one axes, tall enough for ``rows`` rows of labels (no pyplot: no global state)."""
    from matplotlib.figure import Figure

    drawing = Figure(figsize=(10, 1.4 + rows * row_inches), layout="constrained")
    return drawing, drawing.add_subplot()


def name_artists(drawing: Figure, key: str) -> None:
    """Give every artist a ``key-kind-N`` gid, the SVG id written instead of matplotlib's ``patch_1``, which two figures
    on one page would repeat; ticks asked for first (a layout pass to make them would draw every chart again)."""
    for axes in drawing.axes:
        for axis in (axes.xaxis, axes.yaxis):
            axis.get_major_ticks()
            axis.get_minor_ticks()
    for number, artist in enumerate(drawing.findobj()):
        if artist.get_gid() is None:
            artist.set_gid(f"{key}-{type(artist).__name__.lower()}-{number}")


def saved(drawing: Figure, key: str, kind: str = "svg", **options: object) -> bytes:
    """The figure as an SVG or PNG file (``kind``), the same bytes for the same figure (no date or version) and SVG
    ids unique on a page of several charts (named after and salted with ``key``); the evaluation's figures too."""
    from matplotlib import rc_context

    name_artists(drawing, key)
    buffer = io.BytesIO()
    with rc_context({"svg.hashsalt": key}):
        drawing.savefig(buffer, format=kind, metadata=METADATA[kind], **options)
    return buffer.getvalue()


def svg_of(drawing: Figure, key: str) -> str:
    """The figure as an ``<svg>`` element, inline in HTML: without the XML declaration and doctype."""
    text = saved(drawing, key).decode("utf-8")
    return text[text.index("<svg"):]


def short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def rows_axis(axes: Axes, labels: list[str], title: str, x_label: str, y_label: str) -> None:
    """One row per label, top to bottom; the title and axis labels."""
    axes.set_yticks(range(len(labels)), labels)
    axes.set_ylim(len(labels) - 0.5, -0.5)
    axes.set_title(title, pad=16)  # room for the cut-offs' labels above the plot
    axes.set(xlabel=x_label, ylabel=y_label)


def legend(axes: Axes, handles: list | None = None) -> None:
    """The legend right of the plot, clear of its marks."""
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)


# --- the funnel -----------------------------------------------------------------------------------

def funnel_segments(row, rules: list[str]) -> list[tuple[str, int]]:
    """A category's templates in the log, left to right: in the release, dropped by each rule, neither."""
    absent = row.templates - row.released - sum(row.drops.values())
    return [("in the release", row.released), *((f"dropped by {rule}", row.drops.get(rule, 0)) for rule in rules),
            ("not in the release, no drop decision", absent)]


def funnel_chart(funnel: list, rules: list[str]) -> Figure:
    """Per category, the templates in the log as one bar: in the release, dropped by each rule, neither."""
    drawing, axes = figure(len(funnel), 0.32)
    colours = [KEPT, *(DROPS[i % len(DROPS)] for i in range(len(rules))), ABSENT]
    for index, row in enumerate(funnel):
        start = 0
        for (what, count), colour in zip(funnel_segments(row, rules), colours):
            axes.barh(index, count, left=start, height=0.7, color=colour, label=what if index == 0 else None)
            start += count
        axes.annotate(f"{row.released} of {row.templates} kept", (start, index), xytext=(4, 0),
                      textcoords="offset points", va="center")
    rows_axis(axes, [row.display for row in funnel], "Templates per category: kept, and dropped by each rule",
              "template IDs", "category")
    axes.set_xlim(0, max([1, *(row.templates for row in funnel)]) * 1.2)  # room for the numbers
    axes.locator_params(axis="x", integer=True)
    legend(axes)
    return drawing


def samples_chart(funnel: list) -> Figure:
    """Samples per category, this release's beside the paper's."""
    drawing, axes = figure(len(funnel), 0.38)
    for index, row in enumerate(funnel):
        axes.barh(index - 0.18, row.samples, height=0.34, color=OURS, label="this release" if index == 0 else None)
        axes.barh(index + 0.18, row.paper_samples or 0, height=0.34, color=PAPER,
                  label="the paper" if index == 0 else None)
        paper = "-" if row.paper_samples is None else f"{row.paper_samples:,}"
        differs = row.paper_samples is not None and row.paper_samples != row.samples
        axes.annotate(f"{row.samples:,} / paper {paper}", (max(row.samples, row.paper_samples or 0), index),
                      xytext=(4, 0), textcoords="offset points", va="center", color=DIFFERS if differs else None,
                      fontweight="bold" if differs else None)
    rows_axis(axes, [row.display for row in funnel], "Samples per category against the paper", "samples", "category")
    axes.set_xlim(0, max([1, *(max(row.samples, row.paper_samples or 0) for row in funnel)]) * 1.25)
    axes.locator_params(axis="x", integer=True)
    legend(axes)
    return drawing


# --- the survey rules ------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuestionVotes:
    question_id: str
    category: str
    stereotype: str
    votes: dict[str, int]  # group -> votes, questionnaire order


def parse_votes(text: str) -> list[QuestionVotes]:
    """The type-1 questions' votes per group, from ``survey_votes.csv``'s text (none without it)."""
    questions: dict[str, QuestionVotes] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["survey_type"] != "1":
            continue
        entry = questions.setdefault(row["question_id"], QuestionVotes(row["question_id"], row["category"],
                                                                       row["stereotype"], {}))
        entry.votes[row["group"]] = int(row["votes"])
    return list(questions.values())


def dots(axes: Axes, points: list[tuple[float, float, str]]) -> None:
    """Every (x, y, colour) dot in one scatter: one per dot took seconds (each rescales the axes)."""
    if points:
        xs, ys, colours = zip(*points)
        axes.scatter(xs, ys, s=16, zorder=3, color=list(colours))


def type1_role(votes: int, decision: Decision) -> str:
    """A group's role by the rule's cut-offs: target, non-target or neither."""
    if votes >= Fraction(str(decision.numbers["target_cut"])):
        return "target"
    return "non-target" if votes <= Fraction(str(decision.numbers["non_target_cut"])) else "neither"


def type1_chart(questions: list[QuestionVotes], decisions: list[Decision], profile: Profile) -> Figure | None:
    """Each type-1 question a row: each group's votes / the equal share against the rule's target (2x) and
    non-target (0.5x) cut-offs (log scale: they sit symmetrically)."""
    rule = {str(d.numbers.get("question_id")): d for d in decisions
            if d.subject_type == "stereotype" and d.rule == RULE_TYPE1 and d.numbers.get("question_id")}
    order = {name: index for index, name in enumerate(profile.category_names)}
    judged = sorted((q for q in questions if q.question_id in rule), key=lambda q: order.get(q.category, len(order)))
    if not judged:
        return None
    drawing, axes = figure(len(judged), 0.22)
    low, high = RATIO_RANGE
    points = []
    for index, question in enumerate(judged):
        decision = rule[question.question_id]
        equal = Fraction(str(decision.numbers["equal_share"]))
        for group, votes in question.votes.items():  # a group with no vote sits at the left edge
            points.append((float(min(max(Fraction(votes) / equal, low), high)), index,
                           ROLES[type1_role(votes, decision)]))
    dots(axes, points)
    survey = profile.survey
    for ratio, what in ((survey.non_target_ratio, "non-target"), (survey.target_ratio, "target")):
        axes.axvline(float(ratio), color="#222222", linestyle="--", linewidth=0.8)
        axes.annotate(f"{ratio}x: {what}", (float(ratio), 1), xycoords=("data", "axes fraction"),
                      ha="center", va="bottom")
    labels = [f"{'✗ ' if rule[q.question_id].outcome == 'drop' else ''}{short(q.stereotype)}" for q in judged]
    rows_axis(axes, labels, "Type-1 questions: every group's votes against the target and non-target cut-offs",
              "votes / equal share (log scale)", "type-1 question")
    for label, question in zip(axes.get_yticklabels(), judged):
        if rule[question.question_id].outcome == "drop":
            label.set_color(DIFFERS)
    axes.set_xscale("log", base=2)
    axes.set_xlim(float(low), float(high))
    ticks = [Fraction(2) ** k for k in range(-4, 5)]
    axes.set_xticks([float(t) for t in ticks], [str(t) for t in ticks])
    legend(axes, [axes.scatter([], [], s=16, color=colour, label=label) for label, colour in (
        (f"target (>= {survey.target_ratio}x)", ROLES["target"]),
        (f"non-target (<= {survey.non_target_ratio}x)", ROLES["non-target"]),
        ("neither", ROLES["neither"]))])
    return drawing


def share_chart(decisions: list[Decision], profile: Profile, rule: str) -> Figure | None:
    """A row per category, a dot per question: the share ``rule`` judges against its cut-off (``RULE_TYPE2``: the
    target's share of the votes, kept above 2/3; ``RULE_NO_STEREOTYPE``: "no stereotype" answers, dropped above 1/2)."""
    found = [d for d in decisions if d.subject_type == "stereotype" and d.rule == rule]
    if not found:
        return None
    two_thirds = rule == RULE_TYPE2
    cut = profile.survey.type2_agreement if two_thirds else profile.survey.no_stereotype_max
    by_category: dict[str, list[Decision]] = {}
    for decision in found:
        by_category.setdefault(stereotype_text(decision.subject)[0], []).append(decision)
    order = [c.name for c in profile.categories if c.name in by_category]
    order += sorted(by_category.keys() - set(order))
    display = {c.name: c.display for c in profile.categories}
    drawing, axes = figure(len(order), 0.32)
    points = []
    for index, category in enumerate(order):
        for position, decision in enumerate(by_category[category]):
            outcome = "dropped" if decision.outcome == "drop" else "kept"
            share = Fraction(str(decision.numbers["target_share" if two_thirds else "share"]))
            points.append((float(share), index + (position % 3 - 1) * 0.15, OUTCOMES[outcome]))
    dots(axes, points)
    axes.axvline(float(cut), color="#222222", linestyle="--", linewidth=0.8)
    axes.annotate(f"{cut}: {'kept above' if two_thirds else 'dropped above'}", (float(cut), 1),
                  xycoords=("data", "axes fraction"), ha="center", va="bottom")
    title = (f"Type-2 questions: the intended target's share of the votes against {cut}" if two_thirds
             else f"Every surveyed stereotype: the 'no stereotype' share against {float(cut):.0%}")
    rows_axis(axes, [display.get(c, c) for c in order], title,
              "target's share of the votes for a group" if two_thirds
              else "share of respondents answering 'no stereotype'", "category")
    axes.set_xlim(0, 1)
    axes.set_xticks([i / 4 for i in range(5)], [f"{i * 25}%" for i in range(5)])
    legend(axes, [axes.scatter([], [], s=16, color=colour, label=outcome) for outcome, colour in OUTCOMES.items()])
    return drawing


def audit_charts(funnel: list, rules: list[str], votes: list[QuestionVotes], decisions: list[Decision],
                 profile: Profile) -> dict[str, Chart | None]:
    """The report's charts by name; a survey chart is None when the release had no survey."""
    from matplotlib import rc_context

    with rc_context(SETTINGS), warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)
        drawn = {"funnel": funnel_chart(funnel, rules), "samples": samples_chart(funnel),
                 "type1": type1_chart(votes, decisions, profile), "type2": share_chart(decisions, profile, RULE_TYPE2),
                 "no_stereotype": share_chart(decisions, profile, RULE_NO_STEREOTYPE)}
        return {name: drawing and Chart(KEYS[name], svg_of(drawing, KEYS[name]), NOTES[name]) for name, drawing in drawn.items()}


KEYS = {"funnel": "chart-funnel", "samples": "chart-samples", "type1": "chart-type1", "type2": "chart-type2",
        "no_stereotype": "chart-nostereotype"}
NOTES = {
    "funnel": "Each bar is a category's templates in the decision log, split by what became of them.",
    "samples": "Numbers beside each pair: this release / the paper (highlighted where they differ).",
    "type1": "One row per question (✗: dropped by the rule, which needs a target and a non-target); groups with "
             "no vote sit at the left edge.",
    "type2": "One dot per question and intended target; a question is kept when its dot is right of the line.",
    "no_stereotype": "One dot per question; a question is dropped when its dot is right of the line."}
