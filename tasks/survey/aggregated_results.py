"""The released aggregated survey results (``KoBBQ_survey_result.json``), read and checked.

A list of ``{"category", "stereotype", "survey_stats": {group: votes, ..., "no_stereo": votes}}``.
Two groups mean a type-2 question (votes sum to the respondent count); more mean type 1
(several groups may be chosen; ``no_stereo`` counts respondents who chose "no stereotype").
"""

from __future__ import annotations

from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.text_files import read_json
from tasks.survey.groups import norm, profile_group_lists
from tasks.survey.results import NO_STEREO, SurveyResult, SurveyResults, check_votes, merge_duplicates


def load_survey_json(path: Path, profile: Profile) -> SurveyResults:
    data = read_json(path, "survey results file")
    if not isinstance(data, list):
        raise UserError("expected a JSON list of {category, stereotype, survey_stats} entries", path)
    lists = profile_group_lists(profile)
    respondents = profile.survey.respondents_per_question
    entries = []
    for number, item in enumerate(data, start=1):
        category, stereotype, stats = _entry(item, profile, Location(str(path), number))
        votes = {norm(g): v for g, v in stats.items() if g != NO_STEREO}
        if len(votes) < 2:
            raise UserError("a question needs at least two groups", Location(str(path), number, "survey_stats"))
        kind = 2 if len(votes) == 2 else 1
        check_votes(category, stereotype, votes, stats[NO_STEREO], kind, respondents, lists,
                    Location(str(path), number, "survey_stats"))
        entries.append(SurveyResult(category, stereotype, votes, stats[NO_STEREO], respondents, kind,
                                    Location(str(path), number)))
    merged, notes = merge_duplicates(entries)
    return SurveyResults(str(path), tuple(merged), tuple(notes))


def _entry(item: object, profile: Profile, where: Location) -> tuple[str, str, dict[str, int]]:
    """One entry's category, normalised stereotype and vote counts, each checked."""
    def at(column: str) -> Location:
        return Location(where.file, where.row, column)

    if not isinstance(item, dict):
        raise UserError("entry is not an object", where)
    for key in ("category", "stereotype", "survey_stats"):
        if key not in item:
            raise UserError(f"entry has no {key!r}", at(key))
    category, stereotype, stats = item["category"], norm(str(item["stereotype"])), item["survey_stats"]
    if profile.category(category) is None:
        raise UserError(f"unknown category {category!r}", at("category"))
    if not stereotype:
        raise UserError("empty stereotype", at("stereotype"))
    if not isinstance(stats, dict) or NO_STEREO not in stats:
        raise UserError(f"survey_stats must be an object with a {NO_STEREO!r} count", at("survey_stats"))
    for group, value in stats.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UserError(f"votes must be a whole number >= 0, got {value!r}", at(f"survey_stats.{group}"))
    return category, stereotype, stats
