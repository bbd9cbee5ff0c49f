"""Run the survey rules on candidate templates: ``apply_survey_rules``, the one entry point. Every question is judged by
the rule table's rules in order; every template then inherits its stereotypes' outcome, is compared with its type-1
questions' groups (a report, not a filter) and meets the reading rule. Overrides are recorded with ``override=True``.
What it returns (``SurveyOutcome``) is data only: ``tasks.survey.funnel`` renders it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.decisions import Decision, stereotype_subject, template_subject
from core.errors import UserError
from core.findings import Finding
from core.profile import Profile
from tasks.survey.stereotypes import (GroupList, Stereotype, collect_stereotypes, profile_group_lists, row_groups,
                                      type1_group_list, type_decision)
from tasks.survey.inputs import ReadingResults, SurveyData
from tasks.survey.results import SurveyResult, SurveyResults
from tasks.survey.rule_table import Override, OverrideIndex, Question, question_rules
from tasks.survey.rules import (RULE_READING, RULE_RESULT_PRESENT, RULE_STEREOTYPE_SURVEY, RULE_TYPE1,
                                RULE_TYPE1_GROUPS, RULE_UNMATCHED_RESULT, RuleResult, reading_rule)
from tasks.templates.load import TemplateRow, rows_by_template

STAGE = "survey"  # every decision of the survey rules, the reading-comprehension rule's included


@dataclass(frozen=True)
class StereotypeEvaluation:
    stereotype: Stereotype
    result: SurveyResult | None
    near: tuple[SurveyResult, ...]  # results with the same text but another question (explains a missing result)
    rules: dict[str, RuleResult]  # rule name -> the rule's own result (a per-target rule: of the first target)
    by_target: dict[str, dict[str, RuleResult]] = field(default_factory=dict)  # per-target rules: target -> result
    overrides: dict[str, Override] = field(default_factory=dict)

    @property
    def targets(self) -> tuple[str, ...]:
        """Type 1's candidate target groups (in questionnaire order); none for a question it did not judge."""
        return tuple(self.rules[RULE_TYPE1].numbers["targets"]) if RULE_TYPE1 in self.rules else ()

    @property
    def non_targets(self) -> tuple[str, ...]:
        return tuple(self.rules[RULE_TYPE1].numbers["non_targets"]) if RULE_TYPE1 in self.rules else ()

    def passes(self, rule: str, target: str | None = None) -> bool:
        if rule in self.overrides:
            return self.overrides[rule].outcome == "keep"
        if target is not None and target in self.by_target.get(rule, {}):
            return self.by_target[rule][target].keep
        result = self.rules.get(rule)
        if result is None:  # the rule could not run: it passes only if "no result" was overridden to keep
            return rule != RULE_RESULT_PRESENT and self.passes(RULE_RESULT_PRESENT)
        return result.keep

    def first_failure(self, target: str | None = None) -> str | None:
        rules = (rule.name for rule in question_rules(self.stereotype.survey_type))
        return next((rule for rule in rules if not self.passes(rule, target)), None)

    def keep(self, target: str | None = None) -> bool:
        return self.first_failure(target) is None


@dataclass(frozen=True)
class TemplateEvaluation:
    key: tuple[str, int]
    label: str
    stereotypes: tuple[tuple[int, str | None], ...]  # (index into SurveyOutcome.stereotypes, type-2 target)
    survey_keep: bool
    survey_failure: str | None
    reading: RuleResult | None
    keep: bool
    overrides: dict[str, Override] = field(default_factory=dict)


@dataclass(frozen=True)
class SurveyOutcome:
    kept: list[TemplateRow]
    decisions: list[Decision]
    stereotypes: tuple[StereotypeEvaluation, ...]
    templates: tuple[TemplateEvaluation, ...]
    unmatched: tuple[SurveyResult, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    input_templates: tuple[TemplateRow, ...]
    profile: Profile
    results: SurveyResults
    reading: ReadingResults | None
    # The templates are the survivors of an earlier survey (a released template file; ``allow_unmatched``), not
    # this build's candidates: the group check's reports then compare the rules with that release.
    survivors_only: bool = False


def _evaluate(stereotype: Stereotype, result: SurveyResult | None, near: tuple[SurveyResult, ...],
              lists: dict[str, GroupList], profile: Profile, overrides: dict[str, Override]) -> StereotypeEvaluation:
    """Every rule of the question's type in the table's order (one that needs a result only with one; a per-target rule
    once per intended target its templates name)."""
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
    return override.outcome == "keep" if override is not None else rule.keep


def _stereotype_decisions(evaluation: StereotypeEvaluation) -> list[Decision]:
    """The decision rows of one question: its type, every rule that ran (even after an earlier rule dropped it, so the
    funnel shows each rule's own effect), and every override of a rule that could not run, so that it is visible too."""
    stereotype = evaluation.stereotype
    subject = stereotype_subject(stereotype.category, stereotype.text)
    source = str(evaluation.result.where) if evaluation.result is not None else ""
    extra = {"question_id": stereotype.question_id, "survey_type": stereotype.survey_type,
             "groups": list(stereotype.groups)}
    decisions = [type_decision(STAGE, stereotype, extra)]
    for name, rule in evaluation.rules.items():  # a per-target rule (two-thirds) records one row per target
        rows = evaluation.by_target[name].values() if name in evaluation.by_target else (rule,)
        decisions.extend(rule_decision("stereotype", subject, row, source, evaluation.overrides.get(name), extra=extra)
                         for row in rows)
    for name, override in evaluation.overrides.items():
        if name not in evaluation.rules:
            missing = RuleResult(name, False, "the rule could not run: no survey result", {})
            decisions.append(rule_decision("stereotype", subject, missing, source, override, extra=extra))
    return decisions


def evaluate_stereotypes(stereotypes: list[Stereotype], results: SurveyResults, lists: dict[str, GroupList],
                          profile: Profile, overrides: OverrideIndex
                          ) -> tuple[list[StereotypeEvaluation], list[Decision]]:
    """Every question matched with its survey result and judged, with its decisions; one without a result lists the
    results of the same text asked as another question (``near``), to explain why."""
    index = {entry.key: entry for entry in results.entries}
    by_text: dict[tuple[str, str], list[SurveyResult]] = {}
    for entry in results.entries:
        by_text.setdefault((entry.category, entry.stereotype), []).append(entry)
    evaluations: list[StereotypeEvaluation] = []
    decisions: list[Decision] = []
    for stereotype in stereotypes:
        if stereotype.survey_type == 1:
            type1_group_list(stereotype.category, stereotype.text, lists, profile)
        result = index.get(stereotype.key)
        near = () if result is not None else tuple(by_text.get((stereotype.category, stereotype.text), []))
        evaluation = _evaluate(stereotype, result, near, lists, profile, overrides.for_stereotype(stereotype))
        evaluations.append(evaluation)
        decisions.extend(_stereotype_decisions(evaluation))
    return evaluations, decisions


def unmatched_decision(entry: SurveyResult) -> Decision:
    return Decision(
        STAGE, "stereotype", stereotype_subject(entry.category, entry.stereotype), RULE_UNMATCHED_RESULT,
        "unmatched", f"survey result ({entry.as_stats()}) matches no template's question",
        {"survey_type": entry.survey_type, "votes": entry.votes, "no_stereotype": entry.no_stereotype},
        False, str(entry.where))


def _group_differences(rows: list[TemplateRow], evaluation: StereotypeEvaluation) -> list[str]:
    """A type-1 template's groups beside the rule's candidates (the release adds curated choices)."""
    differences = []
    targets, non_targets = set(evaluation.targets), set(evaluation.non_targets)
    for row in rows:
        if not row.target_group.strip():
            continue
        used_targets, used_non = row_groups(row)
        for name, used, candidates in (("target", used_targets, targets), ("non-target", used_non, non_targets)):
            if extra := sorted(used - candidates):
                differences.append(f"version {row.version}: {name}(s) {', '.join(extra)} not among the rule's {name}s")
    return list(dict.fromkeys(differences))


def _links(key: tuple[str, int], evaluations: list[StereotypeEvaluation]) -> tuple[tuple[int, str | None], ...]:
    """The questions that surveyed a template: (index into ``evaluations``, the type-2 target its rows name)."""
    return tuple((i, evaluation.stereotype.targets.get(key)) for i, evaluation in enumerate(evaluations)
                 if key in evaluation.stereotype.templates)


def _stereotype_survey_rule(links: tuple[tuple[int, str | None], ...],
                            evaluations: list[StereotypeEvaluation]) -> RuleResult:
    """A template passes only if every question it was surveyed by passes every rule (type 2: for the target its rows
    name); else the first failing question's first failing rule is named with its reason."""
    for i, target in links:
        evaluation = evaluations[i]
        failure = evaluation.first_failure(target)
        if failure is not None:  # why: the override that decided it, else the rule; one that never ran had no result
            decided = evaluation.overrides.get(failure) or evaluation.rules.get(failure)
            return RuleResult(RULE_STEREOTYPE_SURVEY, False,
                              f"its stereotype '{evaluation.stereotype.label}' was dropped by {failure}: "
                              f"{decided.reason if decided else 'no survey result'}",
                              {"stereotype_rule": failure, "question_id": evaluation.stereotype.question_id})
    labels = "; ".join(f"'{evaluations[i].stereotype.label}'" for i, _ in links)
    return RuleResult(RULE_STEREOTYPE_SURVEY, True, f"its stereotype {labels} passed every survey rule",
                      {"question_ids": [evaluations[i].stereotype.question_id for i, _ in links]})


def _type1_groups_decision(subject: str, source: str, differences: list[str], override: Override | None) -> Decision:
    """Whether a type-1 template's groups are among the rule's candidates: a report, not a filter (the release adds
    curated groups), so a difference is shown ('differs') or accepted by a curated override ('accept')."""
    check = ("; ".join(differences) if differences else
             "the template's target and non-target groups are among the rule's candidates")
    if override is not None:
        return Decision(STAGE, "template", subject, RULE_TYPE1_GROUPS, "accept",
                        f"override ({override.where}): {override.reason}; the rule's check: {check}",
                        {"differences": differences}, True, source)
    outcome = "differs" if differences else "agree"
    return Decision(STAGE, "template", subject, RULE_TYPE1_GROUPS, outcome, check, {"differences": differences},
                    False, source)


def _reading_step(key: tuple[str, int], subject: str, reading: ReadingResults | None, override: Override | None,
                  profile: Profile) -> tuple[RuleResult | None, bool, Decision]:
    """(The reading rule's result, whether it lets the template through, its decision); without reading results it is
    recorded as not applied and lets every template through, so that the log says so."""
    if reading is None:
        if override is not None:  # it would silently do nothing: a curated decision must never be ignored
            raise UserError(f"override for the reading-comprehension rule of {subject}, but no reading-comprehension "
                            "results were given", override.where)
        return None, True, Decision(STAGE, "template", subject, RULE_READING, "not-applied",
                                    "no reading-comprehension results were given", {}, False, "")
    if key in reading.rates:
        result = reading_rule(*reading.rates[key], profile.survey)
    else:  # dropped, never kept silently
        result = RuleResult(RULE_READING, False, "no reading-comprehension result for this template", {})
    return result, passes(result, override), rule_decision("template", subject, result, reading.source, override)


def evaluate_template(key: tuple[str, int], rows: list[TemplateRow], evaluations: list[StereotypeEvaluation],
                       own: dict[str, Override], reading: ReadingResults | None,
                       profile: Profile) -> tuple[TemplateEvaluation, list[Decision]]:
    """One template (all its versions): kept when both its stereotypes' survey outcome and the reading rule let it
    through (after overrides); the type-1 groups report between them."""
    links = _links(key, evaluations)
    subject = template_subject(*key)
    source = f"{rows[0].source}, row {rows[0].row}"
    survey_rule = _stereotype_survey_rule(links, evaluations)
    survey_keep = passes(survey_rule, own.get(RULE_STEREOTYPE_SURVEY))
    decisions = [rule_decision("template", subject, survey_rule, source, own.get(RULE_STEREOTYPE_SURVEY))]

    # Only a type-1 question with a result has rule candidates to compare the template's groups with.
    type1 = [evaluations[i] for i, _ in links
             if evaluations[i].stereotype.survey_type == 1 and evaluations[i].result is not None]
    differences = [d for evaluation in type1 for d in _group_differences(rows, evaluation)]
    if type1:
        decisions.append(_type1_groups_decision(subject, source, differences, own.get(RULE_TYPE1_GROUPS)))

    reading_result, reading_keep, reading_decision = _reading_step(key, subject, reading, own.get(RULE_READING),
                                                                   profile)
    decisions.append(reading_decision)
    # The funnel's first survey failure: the stereotype rule that dropped it, or ``stereotype-survey`` itself when
    # an override dropped a template whose stereotypes passed.
    failure = None if survey_keep else str(survey_rule.numbers.get("stereotype_rule", RULE_STEREOTYPE_SURVEY))
    evaluation = TemplateEvaluation(key, rows[0].label, links, survey_keep, failure, reading_result,
                                    survey_keep and reading_keep, own)
    return evaluation, decisions


def apply_survey_rules(templates: list[TemplateRow], data: SurveyData, profile: Profile,
                       allow_unmatched: bool = False) -> SurveyOutcome:
    """The paper's rules and the overrides on the candidate templates: kept templates, decisions and the report data.
    Results no template asks about are refused unless ``allow_unmatched`` (a released file holds only survivors)."""
    results, reading, overrides = data.results, data.reading, data.overrides
    lists = profile_group_lists(profile)
    stereotypes, findings = collect_stereotypes(templates, profile)
    override_index = OverrideIndex.of(overrides)
    evaluations, decisions = evaluate_stereotypes(stereotypes, results, lists, profile, override_index)
    matched = {e.result.key for e in evaluations if e.result is not None}
    unmatched = tuple(e for e in results.entries if e.key not in matched)
    decisions.extend(unmatched_decision(entry) for entry in unmatched)

    template_evaluations: list[TemplateEvaluation] = []
    for key, rows in rows_by_template(templates).items():  # a template's versions (rows) share one fate
        evaluation, template_decisions = evaluate_template(key, rows, evaluations, override_index.for_template(key),
                                                           reading, profile)
        template_evaluations.append(evaluation)
        decisions.extend(template_decisions)
    override_index.check_all_claimed(overrides)

    if unmatched and not allow_unmatched:  # bad input, unless the templates are survivors only
        raise UserError(f"{len(unmatched)} survey result(s) match no template's question; first: "
                        f"{unmatched[0].category} '{unmatched[0].stereotype}' ({unmatched[0].as_stats()}). If the "
                        "templates are survivors only (e.g. a released template file), allow them (`--allow-unmatched` "
                        "on the command line, `allow_unmatched = true` in a pipeline file's [survey] section)",
                        unmatched[0].where)
    keep_ids = {t.key for t in template_evaluations if t.keep}
    return SurveyOutcome([t for t in templates if t.template_key in keep_ids], decisions, tuple(evaluations),
                         tuple(template_evaluations), unmatched, tuple(findings), results.notes, tuple(templates),
                         profile, results, reading, survivors_only=allow_unmatched)
