"""``funnel.md``: stereotypes and templates before / after each rule, per survey type and category,
beside the paper's reported effects. A view of the decisions already taken; deterministic text."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from pathlib import Path

from tasks.survey.apply import SurveyOutcome, TemplateEvaluation
from tasks.survey.rule_table import STEREOTYPE, effect_rows, rules_of
from tasks.survey.rules import EQUAL_SHARE_BASES, RULE_NO_STEREOTYPE, RULE_READING, RULE_TYPE1, type1_rule


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def table(headers: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


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
    """Each rule's own effect (``RULE_EFFECT_COLUMNS``), beside the paper's: the stereotypes it drops among
    those it could judge, and the templates whose first failing rule it is."""
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
    lines.append(f"Survey results: `{Path(outcome.results.source).name}`: {len(entries)} questions "
                 f"({kinds[1]} type 1, {kinds[2]} type 2); mean 'no stereotype' share "
                 f"{'-' if mean is None else f'{float(mean) * 100:.2f}%'}"
                 + (f" (paper: {paper.get(RULE_NO_STEREOTYPE, '-')})." if paper else "."))
    lines.append(f"Results that match no template's question: {len(outcome.unmatched)}. "
                 f"Reading comprehension: {f'`{Path(outcome.reading.source).name}`' if outcome.reading else 'not given'}.")
    lines.append("")

    # Stereotypes, sequentially through the rules.
    lines += ["## Stereotypes (unique survey questions), rule by rule", ""]
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
    lines += table(["Survey type", "Before", *steps], rows)
    lines.append("")

    # Each rule's own effect.
    lines += ["## Each rule's own effect", "",
              "Stereotypes: those the rule drops among the stereotypes it could judge (with a result), "
              "evaluated independently of the other rules. Templates: those whose first failing rule it is.", ""]
    width = 4 if paper else 3  # no Paper column for a culture without published effects
    lines += table(RULE_EFFECT_COLUMNS[:width], [row[:width] for row in rule_effects(outcome)])
    lines.append("")

    lines += equal_share_section(outcome)

    # Templates per type.
    lines += ["## Templates (template IDs)", ""]
    rows = []
    for label, kind in (("type 1", 1), ("type 2", 2), ("all", "all")):
        group = [t for t in outcome.templates if kind == "all" or template_type(outcome, t) == kind]
        rows.append([label, len(group), sum(t.survey_keep for t in group), sum(t.keep for t in group)])
    lines += table(["Survey type", "Before", "After the survey rules", "After reading comprehension"], rows)
    lines.append("")

    # Per category.
    lines += ["## Per category", ""]
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
    lines += table(["Category", "Stereotypes", "Kept", "Templates", "After survey", "After reading",
                    "Paper templates before -> after"][:width], [row[:width] for row in rows])
    lines.append("")

    overrides = sorted((d for d in outcome.decisions if d.override), key=lambda d: (d.subject, d.rule))
    lines += ["## Overrides", ""]
    lines += [f"- `{d.subject}` {d.rule}: **{d.outcome}** — {d.reason}" for d in overrides] or ["None."]
    lines.append("")
    if outcome.notes or outcome.findings or outcome.results.quota:
        lines += ["## Notes", ""]
        lines += [f"- {note}" for note in outcome.notes]
        lines += [f"- {f.severity}: {f.where}: {f.message}" for f in outcome.findings]
        if outcome.results.quota:
            lines.append(f"- quota shortfalls: {len(outcome.results.quota)} (see the ingest report)")
        lines.append("")
    return "\n".join(lines)
