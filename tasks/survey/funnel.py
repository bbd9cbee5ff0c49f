"""The survey's reports, views of the decisions already taken: ``funnel.md`` (each rule's effect beside the paper's) and
the group check, ``survey_agreement.md``. Against a released template file (``SurveyOutcome.survivors_only``) every
template the rules drop and every group they choose differently is a difference between our reading of the paper and
the release: all are listed with their numbers, none is forced to agree."""

from __future__ import annotations

import ast
from collections import Counter
from fractions import Fraction
from pathlib import Path

from core.tables import markdown_table
from tasks.survey.apply import StereotypeEvaluation, SurveyOutcome, TemplateEvaluation
from tasks.survey.results import NO_STEREO, SurveyResult
from tasks.survey.rule_table import STEREOTYPE, effect_rows, rules_of, type2_on
from tasks.survey.rules import (EQUAL_SHARE_BASES, RULE_NO_STEREOTYPE, RULE_READING, RULE_TYPE1, RULE_TYPE2,
                                no_stereotype_rule, type1_rule)
from tasks.survey.stereotypes import RELEASED_STATS_COLUMN, group_key, norm, row_groups
from tasks.templates.load import TemplateRow, rows_by_template


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def template_type(outcome: SurveyOutcome, template: TemplateEvaluation) -> int | None:
    kinds = [outcome.stereotypes[i].stereotype.survey_type for i, _ in template.stereotypes]
    return min(kinds) if kinds else None


def mean_no_stereotype_share(outcome: SurveyOutcome) -> Fraction | None:
    entries = outcome.results.entries
    return sum(Fraction(e.no_stereotype, e.respondents) for e in entries) / len(entries) if entries else None


def equal_share_section(outcome: SurveyOutcome) -> list[str]:
    """Which type-1 equal share was used, and what the other formula would have done to these results."""
    settings = outcome.profile.survey
    used = settings.type1_equal_share
    other = next(b for b in EQUAL_SHARE_BASES if b != used)
    other_settings = settings.model_copy(update={"type1_equal_share": other})
    judged = [e for e in outcome.stereotypes if e.stereotype.survey_type == 1 and RULE_TYPE1 in e.rules]
    dropped = changed = dropped_other = 0
    for evaluation in judged:
        rule = evaluation.rules[RULE_TYPE1]
        result = evaluation.result
        alternative, targets, non_targets = type1_rule(result.votes, result.no_stereotype, result.respondents,
                                                       rule.numbers["counting_options"], other_settings)
        dropped += not rule.keep
        dropped_other += not alternative.keep
        changed += (targets, non_targets) != (evaluation.targets, evaluation.non_targets)
    formula = {"respondents": "respondents / counted options",
               "votes": "total votes (group votes + 'no stereotype') / counted options"}
    return ["## Type-1 equal share", "",
            f"Used: `type1_equal_share = \"{used}\"`: equal share = {formula[used]}. "
            f"Why: {settings.type1_equal_share_reason or 'no reason given in the profile'}. "
            f"Type-1 stereotypes judged: {len(judged)}; dropped by the type-1 rule: {dropped} "
            f"({pct(dropped, len(judged))}). With `\"{other}\"` ({formula[other]}): {dropped_other} dropped "
            f"({pct(dropped_other, len(judged))}), other candidate sets for {changed} of {len(judged)}."
            + (f" Paper: {settings.paper_effects.get(RULE_TYPE1, '-')}." if settings.paper_effects else ""), ""]


RULE_EFFECT_COLUMNS = ["Rule", "Stereotypes dropped", "Templates dropped", "Paper"]


def rule_effects(outcome: SurveyOutcome) -> list[list[object]]:
    """Each rule's own effect beside the paper's: the stereotypes it drops of those it could judge, and the templates
    whose first failing rule it is."""
    paper = outcome.profile.survey.paper_effects
    first_failures = Counter()
    template_counts = Counter()
    for template in outcome.templates:
        kind = template_type(outcome, template)
        template_counts[kind] += 1
        template_counts["all"] += 1
        if not template.survey_keep and template.survey_failure:
            first_failures[(template.survey_failure, kind)] += 1
            first_failures[(template.survey_failure, "all")] += 1
    rows = []
    for rule in effect_rows():
        if rule.name == RULE_READING:
            rows.append(_reading_effect(outcome))
            continue
        kind = rule.types[0] if len(rule.types) == 1 else None  # a rule of one survey type counts within it
        judged = [e for e in outcome.stereotypes if (kind is None or e.stereotype.survey_type == kind)
                  and (not rule.needs_result or e.result is not None)]
        dropped = [e for e in judged if not e.passes(rule.name)]
        scope = "all" if kind is None else kind
        rows.append([rule.name, f"{len(dropped)} of {len(judged)} ({pct(len(dropped), len(judged))})",
                     f"{first_failures[(rule.name, scope)]} of {template_counts[scope]} "
                     f"({pct(first_failures[(rule.name, scope)], template_counts[scope])})",
                     paper.get(rule.name, "-")])
    return rows


def _reading_effect(outcome: SurveyOutcome) -> list[object]:
    """The reading rule's row: the templates it drops among the survey's survivors (it judges templates)."""
    paper = outcome.profile.survey.paper_effects
    survivors = [t for t in outcome.templates if t.survey_keep]
    if outcome.reading is None:
        return [RULE_READING, "-", "not applied (no results given)", paper.get(RULE_READING, "-")]
    failed = [t for t in survivors if t.reading is not None and not t.keep]
    return [RULE_READING, "-", f"{len(failed)} of {len(survivors)} ({pct(len(failed), len(survivors))})",
            paper.get(RULE_READING, "-")]


def render_funnel(outcome: SurveyOutcome) -> str:
    profile = outcome.profile
    paper = profile.survey.paper_effects
    entries = outcome.results.entries
    kinds = Counter(e.survey_type for e in entries)
    mean = mean_no_stereotype_share(outcome)
    lines = [f"# Survey funnel ({profile.name})", ""]
    if not paper:
        lines += ["The profile gives no published effects of the rules (`[survey.paper_effects]`): the counts below "
                  "are this survey's own, with nothing to compare them with.", ""]
    lines += [f"Survey results: `{Path(outcome.results.source).name}`: {len(entries)} questions "
              f"({kinds[1]} type 1, {kinds[2]} type 2); mean 'no stereotype' share "
              f"{'-' if mean is None else f'{float(mean) * 100:.2f}%'}"
              + (f" (paper: {paper.get(RULE_NO_STEREOTYPE, '-')})." if paper else "."),
              f"Results that match no template's question: {len(outcome.unmatched)}. "
              f"Reading comprehension: {f'`{Path(outcome.reading.source).name}`' if outcome.reading else 'not given'}.",
              ""]

    rows = []
    steps: dict[str, list] = {}  # each "rule by rule" column's heading -> the stereotype rules counted by it
    for rule in rules_of(STEREOTYPE):
        steps.setdefault(rule.funnel_step, []).append(rule)
    for label, kind in (("type 1", 1), ("type 2", 2), ("all", None)):
        left = [e for e in outcome.stereotypes if kind is None or e.stereotype.survey_type == kind]
        row = [label, len(left)]
        for rules in steps.values():  # still kept after every rule of the column that judges the question's type
            left = [e for e in left if all(e.passes(r.name) for r in rules if e.stereotype.survey_type in r.types)]
            row.append(len(left))
        rows.append(row)
    lines += ["## Stereotypes (unique survey questions), rule by rule", "",
              *markdown_table(["Survey type", "Before", *steps], rows), ""]

    width = 4 if paper else 3  # no Paper column for a culture without published effects
    lines += ["## Each rule's own effect", "",
              "Stereotypes: those the rule drops among the stereotypes it could judge (with a result), "
              "evaluated independently of the other rules. Templates: those whose first failing rule it is.", "",
              *markdown_table(RULE_EFFECT_COLUMNS[:width], [row[:width] for row in rule_effects(outcome)]), ""]
    lines += equal_share_section(outcome)

    rows = []
    for label, kind in (("type 1", 1), ("type 2", 2), ("all", "all")):
        group = [t for t in outcome.templates if kind == "all" or template_type(outcome, t) == kind]
        rows.append([label, len(group), sum(t.survey_keep for t in group), sum(t.keep for t in group)])
    lines += ["## Templates (template IDs)", "",
              *markdown_table(["Survey type", "Before", "After the survey rules", "After reading comprehension"], rows),
              ""]

    rows = []
    for category in profile.categories:
        stereo = [e for e in outcome.stereotypes if e.stereotype.category == category.name]
        temps = [t for t in outcome.templates if t.key[0] == category.name]
        if not stereo and not temps:
            continue
        paper_counts = (f"{category.paper.templates_before} -> {category.paper.templates_after}"
                        if category.paper else "-")
        rows.append([category.display, len(stereo), sum(e.keep() for e in stereo), len(temps),
                     sum(t.survey_keep for t in temps), sum(t.keep for t in temps), paper_counts])
    width = 7 if any(category.paper for category in profile.categories) else 6  # no paper column without numbers
    lines += ["## Per category", "", *markdown_table(["Category", "Stereotypes", "Kept", "Templates", "After survey",
                                                      "After reading", "Paper templates before -> after"][:width],
                                                     [row[:width] for row in rows]), ""]

    overrides = sorted((d for d in outcome.decisions if d.override), key=lambda d: (d.subject, d.rule))
    lines += ["## Overrides", "",
              *([f"- `{d.subject}` {d.rule}: **{d.outcome}** — {d.reason}" for d in overrides] or ["None."]), ""]
    if outcome.notes or outcome.findings or outcome.results.quota:
        lines += ["## Notes", ""]
        lines += [f"- {note}" for note in outcome.notes]
        lines += [f"- {f.severity}: {f.where}: {f.message}" for f in outcome.findings]
        if outcome.results.quota:
            lines.append(f"- quota shortfalls: {len(outcome.results.quota)} (see the ingest report)")
        lines.append("")
    return "\n".join(lines)


# --- the group check (survey_agreement.md) ---------------------------------------------------------

def _released_stats(row: TemplateRow) -> dict[str, int] | None:
    text = row.columns.get(RELEASED_STATS_COLUMN, "").strip()
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return {norm(k): v for k, v in value.items()} if isinstance(value, dict) else None


def _stats_text(stats: dict[str, int]) -> str:
    return ", ".join(f"{'no stereotype' if g == NO_STEREO else g} {v}" for g, v in stats.items())


def _names(labels: set[str]) -> str:
    return ", ".join(sorted(labels)) or "-"


def _templates(outcome: SurveyOutcome) -> str:
    """How the reports name the templates: a release's survivors, or this build's candidates."""
    return "released templates" if outcome.survivors_only else "templates"


def _type2_judgement(entry: SurveyResult, asked: dict[tuple, StereotypeEvaluation],
                     outcome: SurveyOutcome) -> tuple[bool, str, str]:
    """Whether the rules keep a type-2 result, which target they judged it for, and why it is dropped."""
    evaluation = asked.get(entry.key)
    if evaluation is not None:
        rules = (evaluation.rules.get(RULE_NO_STEREOTYPE), evaluation.rules.get(RULE_TYPE2))
        reason = "; ".join(r.reason for r in rules if r is not None and not r.keep)
        return evaluation.keep(), "intended target of the template asking this question", reason
    # No question asks exactly these two groups: the more-voted one is the target (a tie: the first).
    target = max(entry.votes, key=entry.votes.__getitem__)
    settings = outcome.profile.survey
    rule = type2_on(entry.votes, target, settings)
    keep = rule.keep and no_stereotype_rule(entry.no_stereotype, entry.respondents, settings).keep
    reason = rule.reason if not rule.keep else f"'no stereotype' {entry.no_stereotype} of {entry.respondents}"
    return keep, f"more-voted group (no {_templates(outcome)[:-1]} asks exactly these two groups)", reason


def _type2_results(outcome: SurveyOutcome) -> list[str]:
    """The type-2 results whose stereotype a released template has, judged by the rules."""
    entries = [e for e in outcome.results.entries if e.survey_type == 2]
    texts = {(t.category, norm(t.stereotype)) for t in outcome.input_templates}
    with_template = [e for e in entries if (e.category, e.stereotype) in texts]
    asked = {e.stereotype.key: e for e in outcome.stereotypes if e.stereotype.survey_type == 2}
    kept, dropped = [], []
    for entry in with_template:
        keep, how, reason = _type2_judgement(entry, asked, outcome)
        (kept if keep else dropped).append((entry, how, reason))
    template = _templates(outcome)[:-1]
    lines = [f"- Type-2 results: {len(entries)}; with a {template} of the same stereotype text: "
             f"**{len(with_template)}**.",
             f"- Kept by the rules: **{len(kept)} of {len(with_template)}** (intended target: the target of the "
             f"{template} asking the same two groups, else the more-voted group)."]
    if dropped:
        lines += ["", "Results of surviving stereotypes that the rules would drop:" if outcome.survivors_only
                  else "Results that the rules drop:", ""]
        lines += markdown_table(["Category", "Stereotype", "Numbers", "Target taken from", "Why"],
                                [[e.category, e.stereotype, e.as_stats(), how, reason] for e, how, reason in dropped])
    return lines + [""]


def _released_stats_verdict(evaluation: StereotypeEvaluation, own: dict[str, int] | None,
                            outcome: SurveyOutcome) -> str:
    """The type-2 rule on the released template file's own numbers for a question, where it can be judged."""
    if not own or len(own) != 3:
        return "-"
    s = evaluation.stereotype
    target = s.targets[s.templates[0]]
    votes = {g: v for g, v in own.items() if g != NO_STEREO}
    if group_key(target) not in map(group_key, votes):
        return "-"
    r = type2_on(votes, target, outcome.profile.survey)
    return f"{r.outcome}: {r.reason}"


def _type2_questions(outcome: SurveyOutcome, rows_of: dict) -> list[str]:
    """The type-2 questions the released templates ask, and those without a result of the same two groups."""
    questions = [e for e in outcome.stereotypes if e.stereotype.survey_type == 2]
    with_result = [e for e in questions if e.result is not None]
    lines = [f"- Type-2 questions asked by the {_templates(outcome)}: {len(questions)}; with a result of the same "
             f"two groups: {len(with_result)}; kept: {sum(e.keep() for e in with_result)}."]
    if missing := [e for e in questions if e.result is None]:
        lines += ["", f"Questions of {_templates(outcome)} with no result for the same two groups. The "
                  f"{'released ' if outcome.survivors_only else ''}template file's own `{RELEASED_STATS_COLUMN}` "
                  "numbers for them, judged by the same rule:", ""]
        rows = []
        for evaluation in missing:
            s = evaluation.stereotype
            ids = ", ".join(f"{c}|{i}" for c, i in s.templates)
            own = _released_stats(rows_of[s.templates[0]][0])
            near = "; ".join(n.as_stats() for n in evaluation.near) or "none"
            rows.append([ids, s.label, near, _stats_text(own) if own else "-",
                         _released_stats_verdict(evaluation, own, outcome)])
        lines += markdown_table(["Templates", "Question", "Results file, same text",
                                 f"Release {RELEASED_STATS_COLUMN}", "Type-2 rule on the release's numbers"], rows)
    return lines + [""]


def _type1_row(evaluation: StereotypeEvaluation, rows_of: dict, own: str) -> tuple[list[object], bool, bool, bool]:
    """One stereotype's groups: the rule's beside those its templates use (``own``: "release" or "template")."""
    groups = [row_groups(row) for key in evaluation.stereotype.templates for row in rows_of[key]]
    used_t, used_n = set().union(*(t for t, _ in groups)), set().union(*(n for _, n in groups))
    rule_t, rule_n = set(evaluation.targets), set(evaluation.non_targets)
    user, verb = ("the release", "does") if own == "release" else ("the templates", "do")
    differences = [text for text, differ in (
        (f"{own} targets not among the rule's targets: {_names(used_t - rule_t)}", used_t - rule_t),
        (f"rule targets {user} {verb} not use: {_names(rule_t - used_t)}", rule_t - used_t),
        (f"{own} non-targets not among the rule's non-targets: {_names(used_n - rule_n)}", used_n - rule_n),
        (f"rule non-targets {user} {verb} not use: {len(rule_n - used_n)}", rule_n - used_n)) if differ]
    rule = evaluation.rules.get(RULE_TYPE1)
    outcome = "no result" if rule is None else rule.outcome
    ids = ", ".join(str(i) for _, i in evaluation.stereotype.templates)
    row = [evaluation.stereotype.category, ids, evaluation.stereotype.text, outcome, _names(rule_t), _names(used_t),
           _names(rule_n), _names(used_n), "; ".join(differences) or "none"]
    return row, used_t == rule_t, used_t <= rule_t, used_n <= rule_n


def _type1_section(outcome: SurveyOutcome, rows_of: dict) -> list[str]:
    evaluations = [e for e in outcome.stereotypes if e.stereotype.survey_type == 1]
    judged = [e for e in evaluations if e.result is not None]
    own = "release" if outcome.survivors_only else "template"
    judgements = [_type1_row(evaluation, rows_of, own) for evaluation in judged]
    equal, subset_t, subset_n = (sum(j[i] for j in judgements) for i in (1, 2, 3))
    kept = sum(e.keep() for e in judged)
    used = "Released" if outcome.survivors_only else "The templates'"
    title = own.capitalize()
    return [
        "## Type 1 (all groups listed)", "",
        f"- Type-1 questions asked by the {_templates(outcome)}: {len(evaluations)}; with a result: "
        f"{len(judged)}; kept by the rules: **{kept} of {len(judged)}**.",
        f"- {used} target groups equal to the rule's targets: {equal} of {len(judged)}; within the rule's "
        f"targets: {subset_t}; {used[0].lower() + used[1:]} non-targets within the rule's non-targets: "
        f"{subset_n} of {len(judged)}.",
        "- Target / non-target groups below are per stereotype, over all rows (versions) of its templates.", "",
        *markdown_table(["Category", "IDs", "Stereotype", "Rule", "Rule targets", f"{title} targets",
                         "Rule non-targets", f"{title} non-targets", "Differences"], [j[0] for j in judgements]), ""]


def _released_stats_differences(outcome: SurveyOutcome, rows_of: dict) -> list[str]:
    """Template rows (``category|ID|version``) whose own ``Survey_stats`` differ from the matched result."""
    return [f"{row.category}|{row.template_id}|{row.version}"
            for evaluation in outcome.stereotypes if evaluation.result is not None
            for key in evaluation.stereotype.templates for row in rows_of[key]
            if _released_stats(row) not in (None, {**evaluation.result.votes,
                                                   NO_STEREO: evaluation.result.no_stereotype})]


def _dropped_templates(outcome: SurveyOutcome) -> list[str]:
    """The released templates the rules drop, each with the rule and the reason of its first drop."""
    dropped = [t for t in outcome.templates if not t.keep]
    if not dropped:
        return []
    reasons: dict[str, str] = {}
    for decision in outcome.decisions:
        if decision.subject_type == "template" and decision.outcome == "drop":
            reasons.setdefault(decision.subject, decision.reason)
    return ([f"{_templates(outcome).capitalize()} the rules drop:", ""]
            + markdown_table(["Template", "Label", "Dropped by", "Reason"],
                             [[f"{t.key[0]}|{t.key[1]}", t.label, t.survey_failure or "reading-comprehension",
                               reasons.get(f"{t.key[0]}|{t.key[1]}", "")] for t in dropped])
            + [""])


def _unmatched_section(outcome: SurveyOutcome) -> list[str]:
    lines = [f"## Results that match no {_templates(outcome)[:-1]}'s question", ""]
    if not outcome.unmatched:
        return lines + ["None.", ""]
    return lines + [f"{len(outcome.unmatched)} results (type 1: "
                    f"{sum(e.survey_type == 1 for e in outcome.unmatched)}, type 2: "
                    f"{sum(e.survey_type == 2 for e in outcome.unmatched)}); for a release these are the "
                    "stereotypes of templates that did not survive, or questions the release asked differently:", "",
                    *markdown_table(["Category", "Stereotype", "Type", "Numbers"],
                                    [[e.category, e.stereotype, e.survey_type, e.as_stats()]
                                     for e in outcome.unmatched]), ""]


def render_group_check(outcome: SurveyOutcome) -> str:
    rows_of = rows_by_template(list(outcome.input_templates))
    total = len(outcome.templates)
    kept = sum(t.keep for t in outcome.templates)
    which = ("all survivors of the paper's process" if outcome.survivors_only else
             f"this build's candidates for {outcome.profile.culture.name} (no earlier release: the rules decide which "
             "survive)")
    lines = [f"# Survey rules against the {_templates(outcome)} ({outcome.profile.name})", "",
             f"Results: `{Path(outcome.results.source).name}`. Templates: {total} template IDs "
             f"({len(outcome.input_templates)} rows), {which}.", "",
             f"- Template IDs the rules keep: **{kept} of {total}** ({pct(kept, total)}).", ""]
    lines += _dropped_templates(outcome)
    lines += ["## Type 2 (two groups compared)", ""] + _type2_results(outcome) + _type2_questions(outcome, rows_of)
    lines += _type1_section(outcome, rows_of)
    differing = _released_stats_differences(outcome, rows_of)
    if outcome.survivors_only or differing:
        lines += [f"## The release's own `{RELEASED_STATS_COLUMN}` column", "",
                  f"Template rows whose `{RELEASED_STATS_COLUMN}` differs from the matched result: {len(differing)}"
                  + (f" ({', '.join(differing)})." if differing else "."), ""]
    lines += _unmatched_section(outcome)
    if outcome.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in outcome.notes] + [""]
    return "\n".join(lines)
