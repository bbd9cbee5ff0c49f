"""Every survey question (unique stereotype) matched with its result and judged by the paper's rules.

Order of evaluation for every question: a survey result must exist; the "no stereotype" rule; the
type-1 target / non-target rule or the type-2 two-thirds rule. Every rule is evaluated and recorded
even after an earlier one dropped the stereotype, so the funnel can show each rule's own effect.
Curated overrides replace a rule's outcome and are recorded with ``override=True`` (``rule_decision``).
Results no question asks about are listed (``unmatched_results``) and recorded.
"""

from __future__ import annotations

from core.decisions import Decision, stereotype_subject
from core.errors import UserError
from core.profile import Profile
from tasks.survey.groups import GroupList, group_key
from tasks.survey.outcome import STAGE, StereotypeEvaluation
from tasks.survey.override_index import OverrideIndex
from tasks.survey.overrides import Override
from tasks.survey.results import SurveyResult, SurveyResults
from tasks.survey.rules import (RULE_NO_STEREOTYPE, RULE_RESULT_PRESENT, RULE_TYPE, RULE_TYPE1, RULE_TYPE2,
                                RULE_UNMATCHED_RESULT, RuleResult, no_stereotype_rule, type1_rule, type2_rule)
from tasks.survey.stereotypes import Stereotype


def _match(stereotype: Stereotype, index: dict[tuple, SurveyResult],
           by_text: dict[tuple[str, str], list[SurveyResult]]) -> tuple[SurveyResult | None, tuple[SurveyResult, ...]]:
    result = index.get(stereotype.key)
    if result is not None:
        return result, ()
    return None, tuple(by_text.get((stereotype.category, stereotype.text), []))


def _presence(stereotype: Stereotype, result: SurveyResult | None, near: tuple[SurveyResult, ...]) -> RuleResult:
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


def _type2_for(stereotype: Stereotype, result: SurveyResult, target: str, profile: Profile) -> RuleResult:
    names = {group_key(g): g for g in result.votes}
    target_name = names[group_key(target)]
    other_name = next(g for g in result.votes if g != target_name)
    return type2_rule(target_name, result.votes[target_name], other_name, result.votes[other_name], profile.survey)


def _evaluate(stereotype: Stereotype, result: SurveyResult | None, near: tuple[SurveyResult, ...],
              lists: dict[str, GroupList], profile: Profile, overrides: dict[str, Override]) -> StereotypeEvaluation:
    rules = {RULE_RESULT_PRESENT: _presence(stereotype, result, near)}
    targets: tuple[str, ...] = ()
    non_targets: tuple[str, ...] = ()
    by_target: dict[str, RuleResult] = {}
    if result is not None:
        rules[RULE_NO_STEREOTYPE] = no_stereotype_rule(result.no_stereotype, result.respondents, profile.survey)
        if stereotype.survey_type == 1:
            options = lists[stereotype.category].counting_options(profile.survey.count_no_stereotype_option)
            rules[RULE_TYPE1], targets, non_targets = type1_rule(result.votes, result.no_stereotype,
                                                                 result.respondents, options, profile.survey)
        else:
            for target in dict.fromkeys(stereotype.targets.values()):
                by_target[target] = _type2_for(stereotype, result, target, profile)
            rules[RULE_TYPE2] = next(iter(by_target.values()))
    return StereotypeEvaluation(stereotype, result, near, rules, by_target, targets, non_targets, overrides)


def rule_decision(subject_type: str, subject: str, rule: RuleResult, source: str, override: Override | None,
                  extra: dict | None = None) -> Decision:
    """A rule's result as a decision; a curated override replaces its outcome and keeps the rule's in the reason."""
    numbers = {**rule.numbers, **(extra or {})}
    if override is None:
        return Decision(STAGE, subject_type, subject, rule.rule, rule.outcome, rule.reason, numbers, False, source)
    reason = (f"override ({override.where}): {override.reason}; the rule said {rule.outcome}: {rule.reason}")
    numbers["rule_outcome"] = rule.outcome
    return Decision(STAGE, subject_type, subject, rule.rule, override.outcome, reason, numbers, True, source)


def passes(rule: RuleResult, override: Override | None) -> bool:
    """The outcome that counts: a curated override replaces the rule's own keep / drop."""
    if override is not None:
        return override.outcome == "keep"
    return rule.keep


def _results_by_text(results: SurveyResults) -> dict[tuple[str, str], list[SurveyResult]]:
    """Results by (category, stereotype text), to explain a missing result by one asked as another question."""
    by_text: dict[tuple[str, str], list[SurveyResult]] = {}
    for entry in results.entries:
        by_text.setdefault((entry.category, entry.stereotype), []).append(entry)
    return by_text


def _require_group_list(stereotype: Stereotype, lists: dict[str, GroupList], profile: Profile) -> None:
    """A type-1 question offers the category's whole group list and the rule counts its options: without
    a list in the profile the question cannot be judged, which is a profile error, not a drop."""
    if stereotype.survey_type == 1 and stereotype.category not in lists:
        raise UserError(f"type-1 stereotype '{stereotype.text}' in {stereotype.category}, but the profile has no "
                        f"group list for {stereotype.category}", f"survey/{profile.name}/groups.csv")


def _rule_rows(evaluation: StereotypeEvaluation, name: str, rule: RuleResult) -> tuple[RuleResult, ...]:
    """The results one rule contributes to the log: the two-thirds rule is judged per intended target
    (templates of one question can target either group), so it records one row per target."""
    if name == RULE_TYPE2:
        return tuple(evaluation.type2_by_target.values())
    return (rule,)


def _stereotype_decisions(evaluation: StereotypeEvaluation) -> list[Decision]:
    """The decision rows of one question: its type and why, every rule that ran (even after an earlier
    rule dropped it, so the funnel shows each rule's own effect), and every override of a rule that
    could not run (e.g. a keep where no result exists), so that override is visible too."""
    stereotype = evaluation.stereotype
    subject = stereotype_subject(stereotype.category, stereotype.text)
    source = str(evaluation.result.where) if evaluation.result is not None else ""
    extra = {"question_id": stereotype.question_id, "survey_type": stereotype.survey_type,
             "groups": list(stereotype.groups)}
    decisions = [Decision(STAGE, "stereotype", subject, RULE_TYPE, f"type {stereotype.survey_type}",
                          stereotype.type_reason, extra, False, "")]
    for name, rule in evaluation.rules.items():
        override = evaluation.overrides.get(name)
        decisions.extend(rule_decision("stereotype", subject, row, source, override, extra=extra)
                         for row in _rule_rows(evaluation, name, rule))
    for name, override in evaluation.overrides.items():
        if name not in evaluation.rules:
            missing = RuleResult(name, False, "the rule could not run: no survey result", {})
            decisions.append(rule_decision("stereotype", subject, missing, source, override, extra=extra))
    return decisions


def evaluate_stereotypes(stereotypes: list[Stereotype], results: SurveyResults, lists: dict[str, GroupList],
                          profile: Profile, overrides: OverrideIndex
                          ) -> tuple[list[StereotypeEvaluation], list[Decision]]:
    """Every question matched with its survey result and judged by its rules, with its decisions."""
    index = results.index()
    by_text = _results_by_text(results)
    evaluations: list[StereotypeEvaluation] = []
    decisions: list[Decision] = []
    for stereotype in stereotypes:
        _require_group_list(stereotype, lists, profile)
        result, near = _match(stereotype, index, by_text)
        evaluation = _evaluate(stereotype, result, near, lists, profile, overrides.for_stereotype(stereotype))
        evaluations.append(evaluation)
        decisions.extend(_stereotype_decisions(evaluation))
    return evaluations, decisions


def unmatched_results(results: SurveyResults, evaluations: list[StereotypeEvaluation]) -> tuple[SurveyResult, ...]:
    """Results no candidate template asks about (recorded always; rejected or allowed by the caller)."""
    matched = {e.result.key for e in evaluations if e.result is not None}
    return tuple(e for e in results.entries if e.key not in matched)


def unmatched_decision(entry: SurveyResult) -> Decision:
    return Decision(
        STAGE, "stereotype", stereotype_subject(entry.category, entry.stereotype), RULE_UNMATCHED_RESULT,
        "unmatched", f"survey result ({entry.as_stats()}) matches no template's question",
        {"survey_type": entry.survey_type, "votes": entry.votes, "no_stereotype": entry.no_stereotype},
        False, str(entry.where))
