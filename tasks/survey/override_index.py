"""The curated overrides by subject: each stereotype rule and template claims its own, and an override
nobody claimed is an error (a maintainer's decision never lingers unnoticed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import UserError
from tasks.survey.rule_table import question_rules
from tasks.survey.overrides import Override
from tasks.survey.stereotypes import Stereotype


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
