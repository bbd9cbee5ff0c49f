"""The paper's survey rules, each a small pure function: inputs in, keep/drop + reason + numbers out.

Scores (shares, equal share, correct rate) are computed apart from the cut-off and returned in ``numbers``, so a
reviewer sees how far from the threshold every item was. Cut-offs come from the profile as exact fractions: 2/3 of 300
votes is exactly 200, never 199.99."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from core.profile import SurveyProfile

RULE_TYPE = "survey-type"
RULE_RESULT_PRESENT = "survey-result-present"
RULE_TYPE1 = "type1-target-non-target"
RULE_TYPE2 = "type2-two-thirds"
RULE_NO_STEREOTYPE = "no-stereotype-majority"
RULE_READING = "reading-comprehension"
RULE_STEREOTYPE_SURVEY = "stereotype-survey"  # a template inherits its stereotype's outcome
RULE_TYPE1_GROUPS = "type1-template-groups"  # a type-1 template's groups within the rule's candidates
RULE_UNMATCHED_RESULT = "result-without-template"


@dataclass(frozen=True)
class RuleResult:
    rule: str
    keep: bool
    reason: str
    numbers: dict[str, object] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return "keep" if self.keep else "drop"


def _share(part: int, whole: int) -> Fraction:
    return Fraction(part, whole) if whole else Fraction(0)


def _pct(value: Fraction) -> str:
    return f"{float(value) * 100:.1f}%"


def survey_type(label: str, category: str, reference_names_non_target: bool,
                settings: SurveyProfile, culture: str = "local") -> tuple[int, str]:
    """Which question a stereotype gets (paper section 3.5): type 1 (select all groups that apply) where the survey must
    *find* the groups (TM templates; ``type1_categories`` unless the reference names the non-target group), else type 2,
    whether the intended target beats the named non-target. ``culture``: the profile's adjective ("Korean")."""
    if label == "TM":
        return 1, f"TM template: the {culture} target groups must be found by the survey (type 1)"
    if category in settings.type1_categories:
        if reference_names_non_target:
            return 2, (f"{label} template in {category}, but its reference names the non-target group, "
                       "so only the two named groups are compared (type 2)")
        return 1, f"{label} template in {category}, a category whose target groups are surveyed (type 1)"
    return 2, f"{label} template in {category}: the two named groups are compared (type 2)"


EQUAL_SHARE_BASES = ("respondents", "votes")  # SurveyProfile.type1_equal_share


def type1_rule(votes: Mapping[str, int], no_stereotype: int, respondents: int, counting_options: int,
               settings: SurveyProfile) -> tuple[RuleResult, tuple[str, ...], tuple[str, ...]]:
    """Type 1: find target and non-target groups; drop when either set is empty.

    ``equal`` = basis / counting options, the basis ``settings.type1_equal_share``: all votes cast (the paper's wording)
    or the people asked (why ko uses these: its profile's ``type1_equal_share_reason``). A target has votes >= 2 x
    equal, a non-target <= 0.5 x equal; the counting options are the profile's (world regions stand for their
    countries), which keeps the threshold from becoming so low that everything is a target. Returns the rule result and
    the candidate target / non-target groups in questionnaire order."""
    basis = settings.type1_equal_share
    total_votes = sum(votes.values()) + no_stereotype
    numerator = respondents if basis == "respondents" else total_votes
    equal = Fraction(numerator, counting_options)
    target_cut = settings.target_ratio * equal
    non_target_cut = settings.non_target_ratio * equal
    targets = tuple(g for g, v in votes.items() if v >= target_cut)
    non_targets = tuple(g for g, v in votes.items() if v <= non_target_cut)
    keep = bool(targets) and bool(non_targets)
    numbers = {
        "equal_share_basis": basis, "respondents": respondents, "total_votes": total_votes,
        "counting_options": counting_options, "equal_share": str(equal),
        "target_cut": str(target_cut), "non_target_cut": str(non_target_cut),
        "targets": list(targets), "non_targets": list(non_targets),
    }
    sets = f"targets {', '.join(targets) or 'none'}; non-targets {', '.join(non_targets) or 'none'}"
    share = (f"equal share {numerator} {basis}/{counting_options} options = {float(equal):.2f} votes; {sets} "
             f"(target >= {float(target_cut):.2f}, non-target <= {float(non_target_cut):.2f})")
    reason = share if keep else f"no {'target' if not targets else 'non-target'} group: {share}"
    return RuleResult(RULE_TYPE1, keep, reason, numbers), targets, non_targets


def type2_rule(target: str, target_votes: int, other: str, other_votes: int,
               settings: SurveyProfile) -> RuleResult:
    """Type 2: keep when the intended target gets more than two-thirds of the votes for a group ("no stereotype" answers
    are judged by their own rule: here the question is whether those who see a stereotype agree on its target)."""
    decided = target_votes + other_votes
    share = _share(target_votes, decided)
    keep = decided > 0 and share > settings.type2_agreement
    numbers = {"target": target, "target_votes": target_votes, "other": other, "other_votes": other_votes,
               "target_share": str(share), "cut": str(settings.type2_agreement)}
    relation = "above" if keep else "not above"
    reason = (f"{target} got {target_votes} of {decided} votes for a group ({_pct(share)}), "
              f"{relation} {settings.type2_agreement} ({_pct(settings.type2_agreement)}); {other} got {other_votes}")
    return RuleResult(RULE_TYPE2, keep, reason, numbers)


def no_stereotype_rule(no_stereotype: int, respondents: int, settings: SurveyProfile) -> RuleResult:
    """Drop a stereotype that most respondents do not recognise (share of "no stereotype" > 1/2)."""
    share = _share(no_stereotype, respondents)
    keep = respondents > 0 and share <= settings.no_stereotype_max
    numbers = {"no_stereotype": no_stereotype, "respondents": respondents, "share": str(share),
               "max": str(settings.no_stereotype_max)}
    relation = "at most" if keep else "more than"
    reason = (f"{no_stereotype} of {respondents} respondents chose 'no stereotype' ({_pct(share)}), "
              f"{relation} {_pct(settings.no_stereotype_max)}")
    return RuleResult(RULE_NO_STEREOTYPE, keep, reason, numbers)


def reading_rule(correct: int, total: int, settings: SurveyProfile) -> RuleResult:
    """Drop a template whose counter-biased disambiguated context most readers misread: if people cannot answer it, a
    model's wrong answer would not measure bias."""
    rate = _share(correct, total)
    keep = total > 0 and rate >= settings.reading_min_correct
    numbers = {"correct": correct, "total": total, "rate": str(rate), "min": str(settings.reading_min_correct)}
    relation = "at least" if keep else "below"
    reason = f"{correct} of {total} readers answered correctly ({_pct(rate)}), {relation} {_pct(settings.reading_min_correct)}"
    return RuleResult(RULE_READING, keep, reason, numbers)
