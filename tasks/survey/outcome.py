"""What the survey rules produced: one evaluation per question and per template, and the outcome.

Data only: ``tasks.survey.apply`` fills it, ``tasks.survey.funnel`` and ``tasks.survey.group_check``
render it (``render_funnel``, ``render_group_check``), so they import this module and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.decisions import Decision
from core.findings import Finding
from core.profile import Profile
from tasks.survey.overrides import Override
from tasks.survey.inputs import ReadingResults
from tasks.survey.results import SurveyResult, SurveyResults
from tasks.survey.rule_table import question_rules
from tasks.survey.rules import RULE_RESULT_PRESENT, RULE_TYPE1, RuleResult
from tasks.survey.stereotypes import Stereotype
from tasks.templates.load import TemplateRow

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
