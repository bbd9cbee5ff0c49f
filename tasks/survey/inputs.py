"""The survey stage's inputs (``SurveyInputs``: which files) and their contents (``SurveyData``: read and
checked), read one way for every entry point (the pipeline's survey stage, ``kobbq build --templates
--survey-results`` and ``kobbq survey ingest``).

- results: the released aggregated JSON, or respondent-level CSV/xlsx checked against the exported
  ``questions.csv`` (given, else the one beside the results);
- reading comprehension (optional): aggregated, or respondent answers scored against the
  ``reading_questions.csv`` beside them;
- overrides: the given file, else ``overrides.csv`` in the profile's survey folder (ko:
  ``core/profiles/ko/survey/overrides.csv``) when it exists,
  else none (``SurveyInputs.resolve`` names it, so that a fingerprint of ``files()`` includes it);
- ``allow_unmatched``: results that match no candidate template's question are always recorded (a
  ``result-without-template`` decision each, counted in ``funnel.md``) and refused unless allowed
  (``--allow-unmatched``, or ``allow_unmatched = true`` in a pipeline file's ``[survey]``, as the
  real-data pipeline does: a released template file holds only the survivors).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.text_files import check_input_file, read_json
from tasks.survey.groups import norm, profile_group_lists, profile_survey_dir
from tasks.survey.overrides import Override, load_overrides
from tasks.survey.reading_comprehension import ReadingResults, load_reading_results
from tasks.survey.respondents import load_respondent_results
from tasks.survey.results import NO_STEREO, SurveyResult, SurveyResults, check_votes, merge_duplicates


@dataclass(frozen=True)
class SurveyData:
    results: SurveyResults
    reading: ReadingResults | None = None
    overrides: list[Override] = field(default_factory=list)


@dataclass(frozen=True)
class SurveyInputs:
    results: Path  # released JSON, or respondent-level CSV/xlsx
    reading: Path | None = None
    overrides: Path | None = None
    questions: Path | None = None  # the exported questions.csv, for respondent-level results
    allow_unmatched: bool = False  # results no template asks about: an error, unless the templates are survivors

    def files(self) -> dict[str, Path]:
        files = {"survey_results": self.results, "reading_results": self.reading,
                 "survey_overrides": self.overrides, "survey_questions": self.questions}
        return {role: path for role, path in files.items() if path is not None}

    def resolve(self, profile: Profile) -> SurveyInputs:
        """The same inputs with the overrides file that will be used: the given one, else the profile's default."""
        return replace(self, overrides=self.overrides or default_overrides_path(profile))

    def check_exist(self) -> None:
        """Each input is there and a regular file (a folder, a device or a named pipe is named as such)."""
        for role, path in self.files().items():
            check_input_file(path, f"{role.replace('_', ' ')} file")

    def read(self, profile: Profile) -> SurveyData:
        """Read and check every survey input (see the module docstring for the defaults)."""
        survey = load_survey_results(self.results, profile, self.questions)
        reading = load_reading_results(self.reading) if self.reading else None
        overrides = self.overrides or default_overrides_path(profile)
        return SurveyData(survey, reading, load_overrides(overrides) if overrides else [])


def default_overrides_path(profile: Profile) -> Path | None:
    """The profile's curated overrides, ``overrides.csv`` in its survey folder (``[files] survey``), when the file
    exists."""
    path = profile_survey_dir(profile) / "overrides.csv"
    return path if path.exists() else None


def load_survey_results(path: Path, profile: Profile, questions: Path | None = None) -> SurveyResults:
    """The released JSON, or a respondent-level CSV/xlsx (which needs the exported ``questions.csv``;
    by default the one in the same folder)."""
    path = check_input_file(Path(path), "survey results file")  # a folder is not taken for respondent results
    if path.suffix.lower() == ".json":
        results = load_survey_json(path, profile)
    else:
        questions = questions or path.parent / "questions.csv"
        if not questions.exists():
            raise UserError(f"respondent-level results need the exported questions.csv (`--questions` on the "
                            f"command line, `survey.questions` in a pipeline file); {questions} does not exist", path)
        results = load_respondent_results(path, questions, profile)
    if not results.entries:  # a header alone, or []: every template would be dropped for want of votes
        raise UserError("holds no survey results (a header alone, or an empty list): every stereotype would be "
                        "dropped for want of votes; give the file with the respondents' answers", path)
    return results


def load_survey_json(path: Path, profile: Profile) -> SurveyResults:
    """The released aggregated results (``KoBBQ_survey_result.json``): a list of ``{"category", "stereotype",
    "survey_stats": {group: votes, ..., "no_stereo": votes}}``. Two groups mean a type-2 question (votes sum to the
    respondent count); more mean type 1 (several groups may be chosen; ``no_stereo`` counts "no stereotype")."""
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
