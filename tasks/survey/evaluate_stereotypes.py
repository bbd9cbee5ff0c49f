"""Every survey question (unique stereotype) matched with its result and judged by the paper's rules.

Order of evaluation for every question (the rule table, ``tasks.survey.rule_table``): a survey result must
exist; the "no stereotype" rule; the type-1 target / non-target rule or the type-2 two-thirds rule. Every
rule is evaluated and recorded even after an earlier one dropped the stereotype, so the funnel can show each
rule's own effect. Curated overrides replace a rule's outcome and are recorded with ``override=True`` (``rule_decision``).
Results no question asks about are listed (``unmatched_results``) and recorded.
"""

from __future__ import annotations

from dataclasses import replace

from core.decisions import Decision, stereotype_subject
from core.errors import UserError
from core.profile import Profile
from tasks.survey.groups import GroupList
from tasks.survey.outcome import STAGE, StereotypeEvaluation
from tasks.survey.overrides import Override, OverrideIndex
from tasks.survey.results import SurveyResult, SurveyResults
from tasks.survey.rule_table import Question, question_rules
from tasks.survey.rules import RULE_TYPE, RULE_UNMATCHED_RESULT, RuleResult
from tasks.survey.stereotypes import Stereotype


def _match(stereotype: Stereotype, index: dict[tuple, SurveyResult],
           by_text: dict[tuple[str, str], list[SurveyResult]]) -> tuple[SurveyResult | None, tuple[SurveyResult, ...]]:
    result = index.get(stereotype.key)
    if result is not None:
        return result, ()
    return None, tuple(by_text.get((stereotype.category, stereotype.text), []))


def _evaluate(stereotype: Stereotype, result: SurveyResult | None, near: tuple[SurveyResult, ...],
              lists: dict[str, GroupList], profile: Profile, overrides: dict[str, Override]) -> StereotypeEvaluation:
    """Every rule of the question's type, in the table's order (``tasks.survey.rule_table``); a rule that needs a
    result does not run without one. A per-target rule runs once per intended target its templates name."""
    question = Question(stereotype, result, near, lists, profile)
    rules: dict[str, RuleResult] = {}
    by_target: dict[str, dict[str, RuleResult]] = {}
    for rule in question_rules(stereotype.survey_type):
        if rule.judge is None or (rule.needs_result and result is None):
            continue
        if rule.per_target:
            by_target[rule.name] = {target: rule.judge(replace(question, target=target))
                                    for target in dict.fromkeys(stereotype.targets.values())}
            rules[rule.name] = next(iter(by_target[rule.name].values()))
        else:
            rules[rule.name] = rule.judge(question)
    return StereotypeEvaluation(stereotype, result, near, rules, by_target, overrides)


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
    """The results one rule contributes to the log: a per-target rule (the two-thirds rule: templates of one
    question can target either group) records one row per target."""
    if name in evaluation.by_target:
        return tuple(evaluation.by_target[name].values())
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
