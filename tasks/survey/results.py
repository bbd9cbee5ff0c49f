"""Survey results: what one surveyed question's result is, and the checks every result passes, in whichever of the two
formats ``tasks.survey.inputs`` read it."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import Location, UserError
from core.tables import at_column
from tasks.survey.stereotypes import GroupList, norm, question_key

NO_STEREO = "no_stereo"
OPTION_SEPARATOR = ";"  # between the options of a questionnaire row and the answers of a respondent


@dataclass(frozen=True)
class SurveyResult:
    category: str
    stereotype: str  # normalised text
    votes: dict[str, int]  # group -> votes, in questionnaire order
    no_stereotype: int
    respondents: int
    survey_type: int
    where: Location
    question_id: str = ""

    @property
    def key(self) -> tuple:
        return question_key(self.category, self.stereotype, self.survey_type,
                            tuple(self.votes) if self.survey_type == 2 else ())

    def as_stats(self) -> str:
        return ", ".join([f"{g} {v}" for g, v in self.votes.items()] + [f"no stereotype {self.no_stereotype}"])


@dataclass(frozen=True)
class QuotaShortfall:
    question_id: str
    what: str  # "respondents" | "gender:<g>" | "age_band:<a>" | "cell:<g>/<a>"
    expected: int
    actual: int


@dataclass(frozen=True)
class SurveyResults:
    source: str
    entries: tuple[SurveyResult, ...]
    notes: tuple[str, ...] = ()  # e.g. identical duplicate entries merged
    quota: tuple[QuotaShortfall, ...] = ()


def check_votes(category: str, stereotype: str, votes: dict[str, int], no_stereo: int, kind: int,
                respondents: int, lists: dict[str, GroupList], where: Location) -> None:
    """Votes a question of this type could have received: type 2 adds up to the respondents; type 1 names only groups of
    the category's list and gives no option more votes than respondents."""
    if kind == 2:
        total = sum(votes.values()) + no_stereo
        if total != respondents:
            raise UserError(f"type-2 counts for {stereotype!r} add up to {total}, not to the {respondents} "
                            "respondents of a question", where)
        return
    group_list = lists.get(category)
    if group_list is None:
        raise UserError(f"type-1 result for {category}, but the profile has no group list for {category}", where)
    if unknown := [g for g in votes if g not in group_list.groups]:
        raise UserError(f"unknown group name(s) {', '.join(map(repr, unknown))} for {category}; "
                        f"known: {', '.join(group_list.groups)}", where)
    if over := {g: v for g, v in {**votes, NO_STEREO: no_stereo}.items() if v > respondents}:
        raise UserError(f"more votes than the {respondents} respondents: {over}", where)


def merge_duplicates(entries: list[SurveyResult]) -> tuple[list[SurveyResult], list[str]]:
    """Identical repeats (the release lists Religion '낮은 여성 인권' twice) are merged and noted; repeats with different
    numbers are the same question answered twice, which is an error."""
    seen: dict[tuple, SurveyResult] = {}
    merged, notes = [], []
    for entry in entries:
        first = seen.get(entry.key)
        if first is None:
            seen[entry.key] = entry
            merged.append(entry)
        elif (first.votes, first.no_stereotype) == (entry.votes, entry.no_stereotype):
            notes.append(f"{entry.where}: identical repeat of {first.where} ({entry.category} "
                         f"'{entry.stereotype}'), counted once")
        else:
            raise UserError(f"duplicate question: {entry.category} '{entry.stereotype}' already has different "
                            f"numbers at {first.where}", entry.where)
    return merged, notes


def whole_number(row: dict[str, str], at: Location, column: str) -> int:
    try:
        return int(row[column])
    except ValueError:
        raise UserError(f"{column} {row[column]!r} is not a whole number", at_column(at, column)) from None


def options(cell: str) -> tuple[str, ...]:
    """A questionnaire cell's options (or a respondent's answers), normalised, in order."""
    return tuple(norm(option) for option in cell.split(OPTION_SEPARATOR) if option.strip())


def new_question_id(row: dict[str, str], at: Location, seen: dict[str, object]) -> str:
    """A questionnaire row's ID (survey or reading questionnaire): present, and not used by an earlier row."""
    qid = row["question_id"]
    if not qid:
        raise UserError("empty question_id", at_column(at, "question_id"))
    if qid in seen:
        raise UserError(f"duplicate question ID {qid!r}", at_column(at, "question_id"))
    return qid
