"""The survey rules in one table: a new rule is one entry here, its pure function (``tasks.survey.rules``) and its
cut-off in the profile (``core.profile.SurveyProfile``).

The rest iterates over the table: which rules judge a question and in what order, the decision log's rows, what
a curated override may name and give, which template rules decide whether a template survives, funnel.md's
columns and rows, and the audit report's table of judged questions.

Stereotype rules judge one survey question (a unique stereotype) through ``judge``; template rules
(``stereotype-survey``, ``type1-template-groups``, ``reading-comprehension``) are worked out per template in
``apply.evaluate_template``, and the table holds what the rest needs to know of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.profile import Profile
from tasks.survey.groups import GroupList, group_key
from tasks.survey.results import SurveyResult
from tasks.survey.rules import (RULE_NO_STEREOTYPE, RULE_READING, RULE_RESULT_PRESENT, RULE_STEREOTYPE_SURVEY,
                                RULE_TYPE1, RULE_TYPE1_GROUPS, RULE_TYPE2, RuleResult, no_stereotype_rule, type1_rule,
                                type2_rule)
from tasks.survey.stereotypes import Stereotype

STEREOTYPE, TEMPLATE = "stereotype", "template"
KEEP_OR_DROP = frozenset({"keep", "drop"})


@dataclass(frozen=True)
class Question:
    """What a stereotype rule judges: the question, its survey result (None: none found) and the profile."""

    stereotype: Stereotype
    result: SurveyResult | None
    near: tuple[SurveyResult, ...]  # results with the same text asked as another question (explain a missing one)
    lists: dict[str, GroupList]
    profile: Profile
    target: str | None = None  # a per-target rule: the intended target being judged


@dataclass(frozen=True)
class SurveyRule:
    name: str  # the decision log's rule
    subject: str  # STEREOTYPE (one survey question) or TEMPLATE
    overrides: frozenset[str] = KEEP_OR_DROP  # the outcomes a curated override may give
    types: tuple[int, ...] = (1, 2)  # the survey types whose questions it judges
    judge: Callable[[Question], RuleResult] | None = None  # a stereotype rule's check
    needs_result: bool = True  # runs only on a question with a survey result
    per_target: bool = False  # judged once per intended target (templates of one question can target either group)
    funnel_step: str = ""  # funnel.md's "rule by rule" column counting the questions still kept after it
    funnel_row: int = 0  # its row in funnel.md's "each rule's own effect" (the paper's order: type rules first)
    decides: bool = False  # a template rule whose drop drops the template


def _presence(q: Question) -> RuleResult:
    stereotype, result, near = q.stereotype, q.result, q.near
    if result is not None:
        return RuleResult(RULE_RESULT_PRESENT, True, f"survey result found ({result.where})",
                          {"question_id": result.question_id or stereotype.question_id})
    if near:
        others = "; ".join(f"type {n.survey_type}: {n.as_stats()}" for n in near)
        reason = (f"no survey result for this question (type {stereotype.survey_type}"
                  f"{': ' + ' vs '.join(stereotype.groups) if stereotype.groups else ''}); the results hold the "
                  f"same stereotype text only for another question ({others})")
    else:
        reason = f"no survey result for this stereotype (type {stereotype.survey_type}); it is never kept silently"
    return RuleResult(RULE_RESULT_PRESENT, False, reason,
                      {"question_id": stereotype.question_id, "near": [n.as_stats() for n in near]})


def _no_stereotype(q: Question) -> RuleResult:
    assert q.result is not None
    return no_stereotype_rule(q.result.no_stereotype, q.result.respondents, q.profile.survey)


def _type1(q: Question) -> RuleResult:
    """Its candidate targets and non-targets are in the result's numbers (``targets``, ``non_targets``)."""
    assert q.result is not None
    options = q.lists[q.stereotype.category].counting_options(q.profile.survey.count_no_stereotype_option)
    rule, _, _ = type1_rule(q.result.votes, q.result.no_stereotype, q.result.respondents, options, q.profile.survey)
    return rule


def _type2(q: Question) -> RuleResult:
    assert q.result is not None and q.target is not None
    votes = q.result.votes
    names = {group_key(g): g for g in votes}
    target = names[group_key(q.target)]
    other = next(g for g in votes if g != target)
    return type2_rule(target, votes[target], other, votes[other], q.profile.survey)


AFTER_TYPE_RULE = "After type-1 / type-2 rule"

# In the order the rules judge a question (stereotype rules) and a template (template rules).
RULE_TABLE = (
    SurveyRule(RULE_RESULT_PRESENT, STEREOTYPE, judge=_presence, needs_result=False,
               funnel_step="With a survey result", funnel_row=4),
    SurveyRule(RULE_NO_STEREOTYPE, STEREOTYPE, judge=_no_stereotype, funnel_step="After no-stereotype rule",
               funnel_row=3),
    SurveyRule(RULE_TYPE1, STEREOTYPE, types=(1,), judge=_type1, funnel_step=AFTER_TYPE_RULE, funnel_row=1),
    SurveyRule(RULE_TYPE2, STEREOTYPE, types=(2,), judge=_type2, per_target=True, funnel_step=AFTER_TYPE_RULE,
               funnel_row=2),
    SurveyRule(RULE_STEREOTYPE_SURVEY, TEMPLATE, decides=True),
    SurveyRule(RULE_TYPE1_GROUPS, TEMPLATE, overrides=frozenset({"accept"})),
    SurveyRule(RULE_READING, TEMPLATE, decides=True, funnel_row=5),
)


def rules_of(subject: str) -> tuple[SurveyRule, ...]:
    """The stereotype rules or the template rules, in the table's order (read from the table on every call)."""
    return tuple(rule for rule in RULE_TABLE if rule.subject == subject)


def rule_named(name: str) -> SurveyRule | None:
    return next((rule for rule in RULE_TABLE if rule.name == name), None)


def effect_rows() -> list[SurveyRule]:
    """The rules with a row in funnel.md's "each rule's own effect", in their rows' order."""
    return sorted((rule for rule in RULE_TABLE if rule.funnel_row), key=lambda rule: rule.funnel_row)


def question_rules(survey_type: int) -> tuple[SurveyRule, ...]:
    """The rules a question of ``survey_type`` is judged by, in order; overrides of a question name only these."""
    return tuple(rule for rule in rules_of(STEREOTYPE) if survey_type in rule.types)
