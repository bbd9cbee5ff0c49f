"""The survey stage's inputs, read one way for every entry point (``kobbq survey ingest`` and the build).

Behaviour, the same wherever the survey rules run:

- results: the released aggregated JSON, or respondent-level CSV/xlsx checked against the exported
  ``questions.csv`` (given, else the one beside the results);
- reading comprehension (optional): aggregated, or respondent answers scored against the
  ``reading_questions.csv`` beside them;
- overrides: the given file, else the profile's ``survey/<profile>/overrides.csv`` when it exists,
  else none. ``SurveyData.overrides_path`` says which file was used, so it can be hashed and shown;
- results that match no candidate template's question are always recorded (a
  ``result-without-template`` decision each, counted in ``funnel.md``). ``apply_survey_rules``
  then rejects them unless ``allow_unmatched``: ``kobbq survey ingest`` allows them only with
  ``--allow-unmatched``; the build always allows them, because a released template file holds
  only the templates that survived.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.profile import Profile
from tasks.survey.filter import filter_templates
from tasks.survey.outcome import SurveyOutcome
from tasks.survey.groups import profile_survey_dir
from tasks.survey.overrides import Override, load_overrides
from tasks.survey.results import ReadingResults, SurveyResults, load_reading_results, load_survey_results
from tasks.templates.load import TemplateRow


@dataclass(frozen=True)
class SurveyData:
    results: SurveyResults
    reading: ReadingResults | None
    overrides: list[Override]
    overrides_path: Path | None  # the overrides file used (given, or the profile's default), if any


def default_overrides_path(profile: Profile) -> Path | None:
    """The profile's curated overrides, ``survey/<profile>/overrides.csv``, when the file exists."""
    path = profile_survey_dir(profile) / "overrides.csv"
    return path if path.exists() else None


def load_survey_data(profile: Profile, results: Path, reading: Path | None = None, overrides: Path | None = None,
                     questions: Path | None = None) -> SurveyData:
    """Read and check every survey input (see the module docstring for the defaults)."""
    survey = load_survey_results(results, profile, questions)
    reading_results = load_reading_results(reading) if reading else None
    override_path = overrides or default_overrides_path(profile)
    return SurveyData(survey, reading_results, load_overrides(override_path) if override_path else [], override_path)


def check_unmatched(outcome: SurveyOutcome, allow_unmatched: bool) -> None:
    """A result no candidate template asks about is bad input, unless the templates are survivors only."""
    if outcome.unmatched and not allow_unmatched:
        first = outcome.unmatched[0]
        raise UserError(f"{len(outcome.unmatched)} survey result(s) match no template's question; first: "
                        f"{first.category} '{first.stereotype}' ({first.as_stats()}). If the templates are "
                        "survivors only (e.g. a released template file), allow them (`--allow-unmatched` on the "
                        "command line, `allow_unmatched = true` in a pipeline file's [survey] section)", first.where)


def apply_survey_rules(templates: list[TemplateRow], data: SurveyData, profile: Profile,
                       allow_unmatched: bool) -> SurveyOutcome:
    """The paper's rules and the overrides on the candidate templates; unmatched results checked."""
    outcome = filter_templates(templates, data.results, data.reading, data.overrides, profile)
    check_unmatched(outcome, allow_unmatched)
    return outcome
