"""The survey rules in one table: a new rule is one entry here, its pure function (``tasks.survey.rules``) and its
cut-off in the profile. The rules' order, the decision log's rows, what a curated override may give, which template
rules decide survival and the funnel's tables all read it. Curated overrides (``overrides.csv``) replace a rule's
outcome with a reason, recorded with ``override=True``; one that matches nothing is an error, never a stale leftover."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile, SurveyProfile
from core.tables import at_column, read_table
from tasks.survey.results import SurveyResult, whole_number
from tasks.survey.stereotypes import GroupList, Stereotype, group_key, norm
from tasks.survey.rules import (RULE_NO_STEREOTYPE, RULE_READING, RULE_RESULT_PRESENT, RULE_STEREOTYPE_SURVEY,
                                RULE_TYPE1, RULE_TYPE1_GROUPS, RULE_TYPE2, RuleResult, no_stereotype_rule, type1_rule,
                                type2_rule)

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


def type2_on(votes: dict[str, int], target: str, settings: SurveyProfile) -> RuleResult:
    """The type-2 rule on two groups' votes for ``target`` (matched by ``group_key``) against the other group."""
    target = next(g for g in votes if group_key(g) == group_key(target))
    other = next(g for g in votes if g != target)
    return type2_rule(target, votes[target], other, votes[other], settings)


def _type2(q: Question) -> RuleResult:
    assert q.result is not None and q.target is not None
    return type2_on(q.result.votes, q.target, q.profile.survey)


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


def effect_rows() -> list[SurveyRule]:
    """The rules with a row in funnel.md's "each rule's own effect", in their rows' order."""
    return sorted((rule for rule in RULE_TABLE if rule.funnel_row), key=lambda rule: rule.funnel_row)


def question_rules(survey_type: int) -> tuple[SurveyRule, ...]:
    """The rules a question of ``survey_type`` is judged by, in order; overrides of a question name only these."""
    return tuple(rule for rule in rules_of(STEREOTYPE) if survey_type in rule.types)


# --- curated overrides ----------------------------------------------------------------------------

OVERRIDE_COLUMNS = ["category", "stereotype", "template_id", "rule", "outcome", "reason"]


@dataclass(frozen=True)
class Override:
    category: str
    stereotype: str  # normalised; empty for a template override
    template_id: int | None
    rule: str
    outcome: str
    reason: str
    where: Location

    @property
    def key(self) -> tuple[str, str | int]:
        """Its subject: (category, stereotype text) or (category, template ID)."""
        return (self.category, self.stereotype if self.template_id is None else self.template_id)

    @property
    def subject(self) -> str:
        """How its subject is named in an error message."""
        if self.template_id is None:
            return f"stereotype {self.category} '{self.stereotype}'"
        return f"template {self.category}|{self.template_id}"


def load_overrides(path: Path) -> list[Override]:
    rows, where = read_table(Path(path), OVERRIDE_COLUMNS)
    overrides: list[Override] = []
    seen: set[tuple] = set()
    for row, at in zip(rows, where):
        if not row["category"]:
            raise UserError("empty category", at_column(at, "category"))
        if not row["reason"]:
            raise UserError("an override needs a reason", at_column(at, "reason"))
        template_id = whole_number(row, at, "template_id") if row["template_id"] else None
        rule, outcome = row["rule"], row["outcome"]
        subject = STEREOTYPE if template_id is None else TEMPLATE
        if subject == STEREOTYPE and not row["stereotype"]:
            raise UserError("give a stereotype or a template_id", at_column(at, "stereotype"))
        named = next((known for known in RULE_TABLE if known.name == rule), None)
        if named is None or named.subject != subject:
            names = sorted(r.name for r in rules_of(subject))
            raise UserError(f"rule {rule!r} is not a {subject} rule ({', '.join(names)})", at_column(at, "rule"))
        if outcome not in named.overrides:
            raise UserError(f"outcome for {rule} must be {' or '.join(sorted(named.overrides))}, got {outcome!r}",
                            at_column(at, "outcome"))
        override = Override(row["category"], norm(row["stereotype"]) if template_id is None else "", template_id, rule,
                            outcome, row["reason"], at)
        if (override.key, rule) in seen:
            raise UserError("the same rule is overridden twice for this item", at_column(at, "rule"))
        seen.add((override.key, rule))
        overrides.append(override)
    return overrides


@dataclass
class OverrideIndex:
    """The curated overrides by subject (``Override.key``) and rule, remembering which ones a stereotype or template
    claimed (by identity, so two subjects claiming one override count it once): one nobody claimed is stale."""

    by_subject: dict[tuple[str, str | int], dict[str, Override]]
    claimed: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, overrides: list[Override]) -> OverrideIndex:
        by_subject: dict[tuple[str, str | int], dict[str, Override]] = {}
        for override in overrides:
            by_subject.setdefault(override.key, {})[override.rule] = override
        return cls(by_subject)

    def _claim(self, own: dict[str, Override]) -> dict[str, Override]:
        self.claimed.update(id(o) for o in own.values())
        return own

    def for_stereotype(self, stereotype: Stereotype) -> dict[str, Override]:
        """The overrides of the rules this question is judged by (file order); a rule of the other question type stays
        unclaimed, so an override aimed at the wrong question type is reported stale."""
        rules = {rule.name for rule in question_rules(stereotype.survey_type)}
        named = self.by_subject.get((stereotype.category, stereotype.text), {})
        return self._claim({rule: override for rule, override in named.items() if rule in rules})

    def for_template(self, key: tuple[str, int]) -> dict[str, Override]:
        """Every override naming this candidate template, whatever its rule."""
        return self._claim(self.by_subject.get(key, {}))

    def check_all_claimed(self, overrides: list[Override]) -> None:
        """Raise for the first override (file order) that matched no candidate template or stereotype rule."""
        if stale := [o for o in overrides if id(o) not in self.claimed]:
            raise UserError(f"override for {stale[0].subject} ({stale[0].rule}) matches no candidate template "
                            "or stereotype rule", stale[0].where)
