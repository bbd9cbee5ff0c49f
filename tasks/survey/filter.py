"""Apply the survey rules to candidate templates: the stage's pure entry point ``filter_templates``.

Order of evaluation for every unique stereotype (question): a survey result must exist; the
"no stereotype" rule; the type-1 target / non-target rule or the type-2 two-thirds rule. Every
rule is evaluated and recorded even after an earlier one dropped the stereotype, so the funnel
can show each rule's own effect. A template inherits its stereotype's outcome, then the
reading-comprehension rule applies to it. Curated overrides replace a rule's outcome and are
recorded with ``override=True``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kobbq.errors import UserError
from kobbq.profile import Profile
from tasks.decisions import Decision, stereotype_subject, template_subject
from tasks.findings import Finding
from tasks.survey.groups import GroupList, group_key, profile_group_lists
from tasks.survey.overrides import Override
from tasks.survey.results import ReadingResults, SurveyResult, SurveyResults
from tasks.survey.rules import (RULE_NO_STEREOTYPE, RULE_READING, RULE_RESULT_PRESENT, RULE_STEREOTYPE_SURVEY,
                                RULE_TYPE, RULE_TYPE1, RULE_TYPE1_GROUPS, RULE_TYPE2, RULE_UNMATCHED_RESULT,
                                RuleResult, no_stereotype_rule, reading_rule, type1_rule, type2_rule)
from tasks.survey.stereotypes import Stereotype, collect_stereotypes
from tasks.templates import Template

STAGE = "survey"
READING_STAGE = "reading"


@dataclass(frozen=True)
class StereotypeEvaluation:
    stereotype: Stereotype
    result: SurveyResult | None
    near: tuple[SurveyResult, ...]  # results with the same text but another question (explains a missing result)
    rules: dict[str, RuleResult]  # rule name -> the rule's own result (type 2: of the first target)
    type2_by_target: dict[str, RuleResult] = field(default_factory=dict)
    targets: tuple[str, ...] = ()  # type 1 candidates
    non_targets: tuple[str, ...] = ()
    overrides: dict[str, Override] = field(default_factory=dict)

    def passes(self, rule: str, target: str | None = None) -> bool:
        if rule in self.overrides:
            return self.overrides[rule].outcome == "keep"
        if rule == RULE_TYPE2 and target is not None and target in self.type2_by_target:
            return self.type2_by_target[target].keep
        result = self.rules.get(rule)
        if result is None:  # the rule could not run: it passes only if "no result" was overridden to keep
            return rule != RULE_RESULT_PRESENT and self.passes(RULE_RESULT_PRESENT)
        return result.keep

    def rule_names(self) -> list[str]:
        kind_rule = RULE_TYPE1 if self.stereotype.survey_type == 1 else RULE_TYPE2
        return [RULE_RESULT_PRESENT, RULE_NO_STEREOTYPE, kind_rule]

    def first_failure(self, target: str | None = None) -> str | None:
        for rule in self.rule_names():
            if not self.passes(rule, target):
                return rule
        return None

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
    group_differences: tuple[str, ...] = ()
    overrides: dict[str, Override] = field(default_factory=dict)


@dataclass(frozen=True)
class SurveyOutcome:
    kept: list[Template]
    decisions: list[Decision]
    stereotypes: tuple[StereotypeEvaluation, ...]
    templates: tuple[TemplateEvaluation, ...]
    unmatched: tuple[SurveyResult, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    input_templates: tuple[Template, ...]
    profile: Profile
    results: SurveyResults
    reading: ReadingResults | None

    def funnel_markdown(self) -> str:
        from tasks.survey.funnel import render_funnel

        return render_funnel(self)

    def agreement_markdown(self) -> str:
        from tasks.survey.agreement import render_agreement

        return render_agreement(self)


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


def _split(label: str) -> set[str]:
    return set(group_key(label))


def _group_differences(rows: list[Template], evaluation: StereotypeEvaluation) -> list[str]:
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


def _decision(subject_type: str, subject: str, rule: RuleResult, source: str, override: Override | None,
              stage: str = STAGE, extra: dict | None = None) -> Decision:
    numbers = {**rule.numbers, **(extra or {})}
    if override is None:
        return Decision(stage, subject_type, subject, rule.rule, rule.outcome, rule.reason, numbers, False, source)
    reason = (f"override ({override.where}): {override.reason}; the rule said {rule.outcome}: {rule.reason}")
    numbers["rule_outcome"] = rule.outcome
    return Decision(stage, subject_type, subject, rule.rule, override.outcome, reason, numbers, True, source)


def filter_templates(templates: list[Template], results: SurveyResults, reading: ReadingResults | None,
                     overrides: list[Override], profile: Profile) -> SurveyOutcome:
    """Apply the survey rules; return kept templates (input order), decisions and the report data."""
    lists = profile_group_lists(profile)
    stereotypes, findings = collect_stereotypes(templates, profile)
    index = results.index()
    by_text: dict[tuple[str, str], list[SurveyResult]] = {}
    for entry in results.entries:
        by_text.setdefault((entry.category, entry.stereotype), []).append(entry)

    stereotype_overrides: dict[tuple[str, str], dict[str, Override]] = {}
    template_overrides: dict[tuple[str, int], dict[str, Override]] = {}
    for override in overrides:
        if override.is_template:
            template_overrides.setdefault((override.category, override.template_id), {})[override.rule] = override
        else:
            stereotype_overrides.setdefault((override.category, override.stereotype), {})[override.rule] = override
    used: set[int] = set()

    decisions: list[Decision] = []
    evaluations: list[StereotypeEvaluation] = []
    matched: set[tuple] = set()
    for stereotype in stereotypes:
        if stereotype.survey_type == 1 and stereotype.category not in lists:
            raise UserError(f"type-1 stereotype '{stereotype.text}' in {stereotype.category}, but the profile has no "
                            f"group list for {stereotype.category}", f"survey/{profile.name}/groups.csv")
        result, near = _match(stereotype, index, by_text)
        if result is not None:
            matched.add(result.key)
        own = {r: o for r, o in stereotype_overrides.get((stereotype.category, stereotype.text), {}).items()
               if r in (RULE_RESULT_PRESENT, RULE_NO_STEREOTYPE,
                        RULE_TYPE1 if stereotype.survey_type == 1 else RULE_TYPE2)}
        used.update(id(o) for o in own.values())
        evaluation = _evaluate(stereotype, result, near, lists, profile, own)
        evaluations.append(evaluation)
        subject = stereotype_subject(stereotype.category, stereotype.text)
        source = str(result.where) if result else ""
        extra = {"question_id": stereotype.question_id, "survey_type": stereotype.survey_type,
                 "groups": list(stereotype.groups)}
        decisions.append(Decision(STAGE, "stereotype", subject, RULE_TYPE, f"type {stereotype.survey_type}",
                                  stereotype.type_reason, extra, False, ""))
        for name, rule in evaluation.rules.items():
            if name == RULE_TYPE2:
                for rule2 in evaluation.type2_by_target.values():
                    decisions.append(_decision("stereotype", subject, rule2, source, own.get(name), extra=extra))
            else:
                decisions.append(_decision("stereotype", subject, rule, source, own.get(name), extra=extra))
        for name, override in own.items():
            if name not in evaluation.rules:  # e.g. a keep override where no result exists for the rule to run on
                missing = RuleResult(name, False, "the rule could not run: no survey result", {})
                decisions.append(_decision("stereotype", subject, missing, source, override, extra=extra))

    unmatched = tuple(e for e in results.entries if e.key not in matched)
    for entry in unmatched:
        decisions.append(Decision(
            STAGE, "stereotype", stereotype_subject(entry.category, entry.stereotype), RULE_UNMATCHED_RESULT,
            "unmatched", f"survey result ({entry.as_stats()}) matches no template's question",
            {"survey_type": entry.survey_type, "votes": entry.votes, "no_stereotype": entry.no_stereotype},
            False, str(entry.where)))

    # Templates: rows grouped by (category, ID), in input order.
    rows_of: dict[tuple[str, int], list[Template]] = {}
    for template in templates:
        rows_of.setdefault(template.template_key, []).append(template)
    template_evaluations: list[TemplateEvaluation] = []
    keep_ids: set[tuple[str, int]] = set()
    for key, rows in rows_of.items():
        links = []
        for i, evaluation in enumerate(evaluations):
            if key in evaluation.stereotype.templates:
                links.append((i, evaluation.stereotype.targets.get(key)))
        own = template_overrides.get(key, {})
        used.update(id(o) for o in own.values())
        subject = template_subject(*key)
        source = f"{rows[0].source}, row {rows[0].row}"
        failures = [(evaluations[i], evaluations[i].first_failure(t)) for i, t in links]
        failed = [(e, f) for e, f in failures if f is not None]
        if failed:  # every template has a question: collect_stereotypes raises for one that cannot have one
            evaluation, failure = failed[0]
            detail = evaluation.overrides[failure].reason if failure in evaluation.overrides else \
                evaluation.rules[failure].reason if failure in evaluation.rules else "no survey result"
            survey_rule = RuleResult(RULE_STEREOTYPE_SURVEY, False,
                                     f"its stereotype '{evaluation.stereotype.label}' was dropped by {failure}: {detail}",
                                     {"stereotype_rule": failure, "question_id": evaluation.stereotype.question_id})
        else:
            labels = "; ".join(f"'{evaluations[i].stereotype.label}'" for i, _ in links)
            survey_rule = RuleResult(RULE_STEREOTYPE_SURVEY, True, f"its stereotype {labels} passed every survey rule",
                                     {"question_ids": [evaluations[i].stereotype.question_id for i, _ in links]})
        decisions.append(_decision("template", subject, survey_rule, source, own.get(RULE_STEREOTYPE_SURVEY)))
        survey_keep = (own[RULE_STEREOTYPE_SURVEY].outcome == "keep") if RULE_STEREOTYPE_SURVEY in own \
            else survey_rule.keep

        differences: list[str] = []
        for i, _ in links:
            evaluation = evaluations[i]
            if evaluation.stereotype.survey_type == 1 and evaluation.result is not None:
                differences.extend(_group_differences(rows, evaluation))
        if any(evaluations[i].stereotype.survey_type == 1 and evaluations[i].result is not None for i, _ in links):
            override = own.get(RULE_TYPE1_GROUPS)
            outcome = "accept" if override else ("differs" if differences else "agree")
            reason = ("; ".join(differences) if differences else
                      "the template's target and non-target groups are among the rule's candidates")
            if override:
                reason = f"override ({override.where}): {override.reason}; the rule's check: {reason}"
            decisions.append(Decision(STAGE, "template", subject, RULE_TYPE1_GROUPS, outcome, reason,
                                      {"differences": differences}, override is not None, source))

        reading_result: RuleResult | None = None
        reading_keep = True
        if reading is not None:
            if key in reading.rates:
                correct, total = reading.rates[key]
                reading_result = reading_rule(correct, total, profile.survey)
            else:
                reading_result = RuleResult(RULE_READING, False, "no reading-comprehension result for this template",
                                            {})
            decisions.append(_decision("template", subject, reading_result, reading.source, own.get(RULE_READING),
                                       stage=READING_STAGE))
            reading_keep = (own[RULE_READING].outcome == "keep") if RULE_READING in own else reading_result.keep
        else:
            decisions.append(Decision(READING_STAGE, "template", subject, RULE_READING, "not-applied",
                                      "no reading-comprehension results were given", {}, False, ""))
        keep = survey_keep and reading_keep
        if keep:
            keep_ids.add(key)
        template_evaluations.append(TemplateEvaluation(
            key, rows[0].label, tuple(links), survey_keep, None if survey_keep else survey_rule.numbers.get(
                "stereotype_rule", RULE_STEREOTYPE_SURVEY), reading_result, keep, tuple(differences), own))

    stale = [o for o in overrides if id(o) not in used]
    if stale:
        first = stale[0]
        what = f"template {first.category}|{first.template_id}" if first.is_template else \
            f"stereotype {first.category} '{first.stereotype}'"
        raise UserError(f"override for {what} ({first.rule}) matches no candidate template or stereotype rule",
                        first.where)
    kept = [t for t in templates if t.template_key in keep_ids]
    return SurveyOutcome(kept, decisions, tuple(evaluations), tuple(template_evaluations), unmatched, tuple(findings),
                         results.notes, tuple(templates), profile, results, reading)
