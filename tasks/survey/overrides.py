"""Curated overrides: a maintainer's decision that differs from a rule, with its reason.

File format (CSV, ``overrides.csv`` in the profile's survey folder, e.g. ``core/profiles/ko/survey/``):
``category, stereotype, template_id, rule, outcome, reason``

- a stereotype override names ``category`` + ``stereotype`` (``template_id`` empty) and one of the
  stereotype rules (``survey-result-present``, ``no-stereotype-majority``,
  ``type1-target-non-target``, ``type2-two-thirds``) with outcome ``keep`` or ``drop``;
- a template override names ``category`` + ``template_id`` and ``reading-comprehension`` or
  ``stereotype-survey`` (``keep`` / ``drop``), or ``type1-template-groups`` with ``accept``
  (the template's target / non-target groups are a curated choice beside the rule's candidates,
  e.g. an extra target group).

The pipeline applies them and writes the decision with ``override=True``, keeping the rule's
own outcome and numbers in the reason, so both are visible wherever the decision shows.
An override that matches nothing is an error: a stale override must not linger unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location, UserError
from core.tables import at_column, read_table
from tasks.survey.groups import norm
from tasks.survey.results import whole_number
from tasks.survey.rule_table import STEREOTYPE, TEMPLATE, question_rules, rule_named, rules_of
from tasks.survey.stereotypes import Stereotype

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
    def is_template(self) -> bool:
        return self.template_id is not None


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
        named = rule_named(rule)
        if named is None or named.subject != subject:
            names = sorted(r.name for r in rules_of(subject))
            raise UserError(f"rule {rule!r} is not a {subject} rule ({', '.join(names)})", at_column(at, "rule"))
        if outcome not in named.overrides:
            raise UserError(f"outcome for {rule} must be {' or '.join(sorted(named.overrides))}, got {outcome!r}",
                            at_column(at, "outcome"))
        override = Override(row["category"], norm(row["stereotype"]) if template_id is None else "", template_id, rule,
                            outcome, row["reason"], at)
        identity = (override.category, override.stereotype, override.template_id, override.rule)
        if identity in seen:
            raise UserError("the same rule is overridden twice for this item", at_column(at, "rule"))
        seen.add(identity)
        overrides.append(override)
    return overrides


@dataclass
class OverrideIndex:
    """The curated overrides by subject, remembering which ones a stereotype or template claimed.

    An override that no stereotype rule or candidate template claims is stale: it is an error
    (``check_all_claimed``), so a maintainer's decision never lingers unnoticed. Claims are by
    identity, so two subjects claiming the same override count it once.
    """

    by_stereotype: dict[tuple[str, str], dict[str, Override]]
    by_template: dict[tuple[str, int], dict[str, Override]]
    claimed: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, overrides: list[Override]) -> OverrideIndex:
        by_stereotype: dict[tuple[str, str], dict[str, Override]] = {}
        by_template: dict[tuple[str, int], dict[str, Override]] = {}
        for override in overrides:
            if override.is_template:
                by_template.setdefault((override.category, override.template_id), {})[override.rule] = override
            else:
                by_stereotype.setdefault((override.category, override.stereotype), {})[override.rule] = override
        return cls(by_stereotype, by_template)

    def for_stereotype(self, stereotype: Stereotype) -> dict[str, Override]:
        """The overrides of the rules this question is judged by (file order); a rule of the other
        question type stays unclaimed, so an override aimed at the wrong question type is reported stale."""
        rules = {rule.name for rule in question_rules(stereotype.survey_type)}
        named = self.by_stereotype.get((stereotype.category, stereotype.text), {})
        own = {rule: override for rule, override in named.items() if rule in rules}
        self.claimed.update(id(o) for o in own.values())
        return own

    def for_template(self, key: tuple[str, int]) -> dict[str, Override]:
        """Every override naming this candidate template, whatever its rule."""
        own = self.by_template.get(key, {})
        self.claimed.update(id(o) for o in own.values())
        return own

    def check_all_claimed(self, overrides: list[Override]) -> None:
        """Raise for the first override (file order) that matched no candidate template or stereotype rule."""
        stale = [o for o in overrides if id(o) not in self.claimed]
        if stale:
            first = stale[0]
            raise UserError(f"override for {override_subject(first)} ({first.rule}) matches no candidate template "
                            "or stereotype rule", first.where)


def override_subject(override: Override) -> str:
    """How an override's subject is named in an error message."""
    if override.is_template:
        return f"template {override.category}|{override.template_id}"
    return f"stereotype {override.category} '{override.stereotype}'"
