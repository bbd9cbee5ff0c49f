"""The paper's survey rules as pure functions: exact cut-offs, reasons carrying the numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from core.profile import SurveyProfile
from tasks.survey.stereotypes import group_key
from tasks.survey.rules import (no_stereotype_rule, reading_rule, survey_type, type1_rule, type2_rule)

S = SurveyProfile(type1_categories=["Religion", "Domestic_area_of_origin", "Race_ethnicity_nationality"])


def test_type2_needs_more_than_two_thirds_exactly():
    # 40 of 60 group votes is exactly 2/3: not "more than", so dropped; 41 of 61 is above.
    at_cut = type2_rule("노인", 40, "청년", 20, S)
    above = type2_rule("노인", 41, "청년", 20, S)
    assert not at_cut.keep and above.keep
    assert "40 of 60" in at_cut.reason and "66.7%" in at_cut.reason
    assert at_cut.numbers["target_share"] == "2/3"


def test_type2_ignores_no_stereotype_answers_in_the_share():
    # 30 vs 10 with 60 "no stereotype": 75% of the group votes -> keep (the no-stereotype rule is separate).
    assert type2_rule("A", 30, "B", 10, S).keep
    assert not type2_rule("A", 0, "B", 0, S).keep


def test_type1_equal_share_with_world_regions():
    # Race: 37 shown groups count as 19 + the no-stereotype option = 20; equal share 100/20 = 5.
    votes = {"중국인": 10, "일본인": 9, "호주인": 2, "영국인": 3}
    result, targets, non_targets = type1_rule(votes, 0, 100, 20, S)
    assert targets == ("중국인",) and non_targets == ("호주인",)
    assert result.keep and result.numbers["equal_share"] == "5"


def test_type1_drops_when_a_set_is_empty():
    # Domestic area: 7 regions + no stereotype = 8 options, equal share 12.5, target needs >= 25.
    votes = {"서울": 9, "경기도": 2, "강원도": 24, "충청도": 20, "경상도": 10, "전라도": 10, "제주도": 10}
    result, targets, _ = type1_rule(votes, 15, 100, 8, S)
    assert not result.keep and targets == ()
    assert result.reason.startswith("no target group")
    everyone = {"a": 30, "b": 30, "c": 30}
    assert not type1_rule(everyone, 10, 100, 4, S)[0].keep  # no non-target


VOTES = S.model_copy(update={"type1_equal_share": "votes"})


def test_type1_respondents_basis_exact_boundaries():
    # 100 respondents, 5 counted options: equal 100/5 = 20, target >= 40, non-target <= 10.
    # A at exactly 2 x equal is a target, B at exactly 0.5 x equal a non-target; C (11), D (39) neither.
    votes = {"A": 40, "B": 10, "C": 11, "D": 39}
    result, targets, non_targets = type1_rule(votes, 20, 100, 5, S)
    assert (targets, non_targets) == (("A",), ("B",)) and result.keep
    assert result.numbers["equal_share"] == "20" and result.numbers["equal_share_basis"] == "respondents"
    assert "100 respondents/5 options = 20.00" in result.reason
    # The same answers with equal = all votes cast: (40+10+11+39+20)/5 = 24, target >= 48, non-target <= 12.
    result, targets, non_targets = type1_rule(votes, 20, 100, 5, VOTES)
    assert (targets, non_targets) == ((), ("B", "C")) and not result.keep
    assert result.numbers["total_votes"] == 120 and result.numbers["equal_share"] == "24"
    assert result.reason.startswith("no target group") and "120 votes/5 options = 24.00" in result.reason


def test_type1_votes_basis_exact_boundaries():
    # Votes basis: (60+15+40+15+20)/5 = 30, target >= 60, non-target <= 15: A exactly 2x, B and D exactly 0.5x.
    votes = {"A": 60, "B": 15, "C": 40, "D": 15}
    result, targets, non_targets = type1_rule(votes, 20, 100, 5, VOTES)
    assert (targets, non_targets) == (("A",), ("B", "D")) and result.keep
    # Respondents basis: 100/5 = 20, target >= 40 (A, C), non-target <= 10 (none): dropped.
    result, targets, non_targets = type1_rule(votes, 20, 100, 5, S)
    assert (targets, non_targets) == (("A", "C"), ()) and not result.keep
    assert result.reason.startswith("no non-target group")


def test_no_stereotype_at_exactly_half_is_kept():
    # 50 of 100 is not "more than 50%": kept under either type-1 basis.
    assert no_stereotype_rule(50, 100, S).keep and no_stereotype_rule(50, 100, VOTES).keep
    assert not no_stereotype_rule(51, 100, S).keep


def test_profile_rejects_an_unknown_equal_share_basis():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="type1_equal_share"):
        SurveyProfile(type1_equal_share="people")


@pytest.mark.parametrize("no_stereo, keep", [(50, True), (51, False), (0, True)])
def test_no_stereotype_majority(no_stereo, keep):
    result = no_stereotype_rule(no_stereo, 100, S)
    assert result.keep is keep
    assert f"{no_stereo} of 100" in result.reason


@pytest.mark.parametrize("correct, total, keep", [(50, 100, True), (49, 100, False), (1, 3, False), (2, 3, True)])
def test_reading_comprehension(correct, total, keep):
    assert reading_rule(correct, total, S).keep is keep


def test_survey_type_rule():
    assert survey_type("TM", "Age", False, S)[0] == 1
    assert survey_type("ST", "Religion", False, S)[0] == 1
    assert survey_type("NC", "Race_ethnicity_nationality", True, S)[0] == 2
    assert survey_type("NC", "SES", False, S)[0] == 2
    kind, reason = survey_type("ST", "Domestic_area_of_origin", True, S)
    assert kind == 2 and "reference names the non-target" in reason


def test_thresholds_come_from_the_profile():
    strict = SurveyProfile(type2_agreement=Fraction(3, 4))
    assert type2_rule("A", 70, "B", 30, S).keep and not type2_rule("A", 70, "B", 30, strict).keep


def test_group_labels_compare_as_sets():
    assert group_key("게이, 레즈비언") == group_key("레즈비언,  게이")
