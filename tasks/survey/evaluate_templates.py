"""Each candidate template's fate: its stereotypes' survey outcome, the type-1 groups report, then the
reading-comprehension rule.

A template (all its versions) inherits its stereotypes' outcome (``stereotype-survey``), is compared
with its type-1 questions' candidate groups (a report, not a filter), and then meets the
reading-comprehension rule. Overrides of these rules replace their outcome, as for a question's.
"""

from __future__ import annotations

from core.decisions import Decision, template_subject
from core.errors import UserError
from core.profile import Profile
from tasks.survey.evaluate_stereotypes import passes, rule_decision
from tasks.survey.groups import group_key
from tasks.survey.outcome import STAGE, StereotypeEvaluation, TemplateEvaluation
from tasks.survey.overrides import Override
from tasks.survey.reading_comprehension import ReadingResults
from tasks.survey.rules import (RULE_READING, RULE_STEREOTYPE_SURVEY, RULE_TYPE1_GROUPS, RuleResult,
                                reading_rule)
from tasks.templates.load import TemplateRow


def _split(label: str) -> set[str]:
    return set(group_key(label))


def _group_differences(rows: list[TemplateRow], evaluation: StereotypeEvaluation) -> list[str]:
    """A type-1 template's groups beside the rule's candidates (the release adds curated choices)."""
    differences = []
    targets, non_targets = set(evaluation.targets), set(evaluation.non_targets)
    for row in rows:
        if not row.target_group.strip():
            continue
        used_targets = _split(row.target_group)
        used_non = set().union(*(_split(row.columns.get(c, "")) for c in ("N1_info", "N2_info"))) - used_targets
        extra_t = sorted(used_targets - targets)
        extra_n = sorted(used_non - non_targets)
        if extra_t:
            differences.append(f"version {row.version}: target(s) {', '.join(extra_t)} not among the rule's targets")
        if extra_n:
            differences.append(f"version {row.version}: non-target(s) {', '.join(extra_n)} not among the rule's non-targets")
    return list(dict.fromkeys(differences))


def rows_by_template(templates: list[TemplateRow]) -> dict[tuple[str, int], list[TemplateRow]]:
    """A template's versions (rows) share one fate: group them by (category, ID), in input order."""
    rows_of: dict[tuple[str, int], list[TemplateRow]] = {}
    for template in templates:
        rows_of.setdefault(template.template_key, []).append(template)
    return rows_of


def _links(key: tuple[str, int], evaluations: list[StereotypeEvaluation]) -> tuple[tuple[int, str | None], ...]:
    """The questions that surveyed a template: (index into ``evaluations``, the type-2 target its rows name)."""
    return tuple((i, evaluation.stereotype.targets.get(key)) for i, evaluation in enumerate(evaluations)
                 if key in evaluation.stereotype.templates)


def _failure_detail(evaluation: StereotypeEvaluation, failure: str) -> str:
    """Why ``failure`` dropped the stereotype: the override's reason if one decided it, else the rule's
    own reason; a rule that never ran failed because the question has no survey result."""
    if failure in evaluation.overrides:
        return evaluation.overrides[failure].reason
    if failure in evaluation.rules:
        return evaluation.rules[failure].reason
    return "no survey result"


def _stereotype_survey_rule(links: tuple[tuple[int, str | None], ...],
                            evaluations: list[StereotypeEvaluation]) -> RuleResult:
    """A template's fate from its stereotypes: it passes only if every question it was surveyed by passes
    every rule (type 2: for the target its rows name). Otherwise the first failing question's first failing
    rule is named with its reason. Every template has a question: ``collect_stereotypes`` raises for one
    that cannot have one."""
    for i, target in links:
        evaluation = evaluations[i]
        failure = evaluation.first_failure(target)
        if failure is not None:
            return RuleResult(RULE_STEREOTYPE_SURVEY, False,
                              f"its stereotype '{evaluation.stereotype.label}' was dropped by {failure}: "
                              f"{_failure_detail(evaluation, failure)}",
                              {"stereotype_rule": failure, "question_id": evaluation.stereotype.question_id})
    labels = "; ".join(f"'{evaluations[i].stereotype.label}'" for i, _ in links)
    return RuleResult(RULE_STEREOTYPE_SURVEY, True, f"its stereotype {labels} passed every survey rule",
                      {"question_ids": [evaluations[i].stereotype.question_id for i, _ in links]})


def _survey_failure(survey_rule: RuleResult, survey_keep: bool) -> str | None:
    """The rule the funnel counts as the template's first survey failure: the stereotype rule that dropped
    it, or ``stereotype-survey`` itself when an override dropped a template whose stereotypes passed."""
    if survey_keep:
        return None
    return str(survey_rule.numbers.get("stereotype_rule", RULE_STEREOTYPE_SURVEY))


def _has_type1_candidates(evaluation: StereotypeEvaluation) -> bool:
    """Only a type-1 question with a result has rule candidates to compare a template's groups with."""
    return evaluation.stereotype.survey_type == 1 and evaluation.result is not None


def _type1_groups_decision(subject: str, source: str, differences: list[str], override: Override | None) -> Decision:
    """Whether a type-1 template's target / non-target groups are among the rule's candidates. A report,
    not a filter: the release adds curated groups, so a difference is shown ('differs'), or accepted by a
    curated override ('accept') that keeps the rule's check in its reason."""
    check = ("; ".join(differences) if differences else
             "the template's target and non-target groups are among the rule's candidates")
    if override is not None:
        return Decision(STAGE, "template", subject, RULE_TYPE1_GROUPS, "accept",
                        f"override ({override.where}): {override.reason}; the rule's check: {check}",
                        {"differences": differences}, True, source)
    outcome = "differs" if differences else "agree"
    return Decision(STAGE, "template", subject, RULE_TYPE1_GROUPS, outcome, check, {"differences": differences},
                    False, source)


def _reading_result(key: tuple[str, int], reading: ReadingResults, profile: Profile) -> RuleResult:
    """The reading-comprehension rule on one template; a template without a reading result is dropped,
    never kept silently."""
    if key not in reading.rates:
        return RuleResult(RULE_READING, False, "no reading-comprehension result for this template", {})
    correct, total = reading.rates[key]
    return reading_rule(correct, total, profile.survey)


def _reading_step(key: tuple[str, int], subject: str, reading: ReadingResults | None, override: Override | None,
                  profile: Profile) -> tuple[RuleResult | None, bool, Decision]:
    """The reading rule's part in a template's fate: (its result, whether it lets the template through,
    its decision). Without reading results the rule is recorded as not applied and lets every template
    through, so a build without them still says so in its log."""
    if reading is None:
        if override is not None:  # it would silently do nothing: a curated decision must never be ignored
            raise UserError(f"override for the reading-comprehension rule of {subject}, but no reading-comprehension "
                            "results were given", override.where)
        return None, True, Decision(STAGE, "template", subject, RULE_READING, "not-applied",
                                    "no reading-comprehension results were given", {}, False, "")
    result = _reading_result(key, reading, profile)
    decision = rule_decision("template", subject, result, reading.source, override)
    return result, passes(result, override), decision


def evaluate_template(key: tuple[str, int], rows: list[TemplateRow], evaluations: list[StereotypeEvaluation],
                       own: dict[str, Override], reading: ReadingResults | None,
                       profile: Profile) -> tuple[TemplateEvaluation, list[Decision]]:
    """One template (all its versions): its stereotypes' survey outcome, the type-1 groups report, then
    the reading rule. It is kept when both the survey and the reading rule let it through (after overrides)."""
    links = _links(key, evaluations)
    subject = template_subject(*key)
    source = f"{rows[0].source}, row {rows[0].row}"
    survey_rule = _stereotype_survey_rule(links, evaluations)
    survey_keep = passes(survey_rule, own.get(RULE_STEREOTYPE_SURVEY))
    decisions = [rule_decision("template", subject, survey_rule, source, own.get(RULE_STEREOTYPE_SURVEY))]

    type1 = [evaluations[i] for i, _ in links if _has_type1_candidates(evaluations[i])]
    differences = [d for evaluation in type1 for d in _group_differences(rows, evaluation)]
    if type1:
        decisions.append(_type1_groups_decision(subject, source, differences, own.get(RULE_TYPE1_GROUPS)))

    reading_result, reading_keep, reading_decision = _reading_step(key, subject, reading, own.get(RULE_READING),
                                                                   profile)
    decisions.append(reading_decision)
    evaluation = TemplateEvaluation(key, rows[0].label, links, survey_keep, _survey_failure(survey_rule, survey_keep),
                                    reading_result, survey_keep and reading_keep, own)
    return evaluation, decisions
