"""The survey stage as the build sees it: which files, and what it contributes to a release.

The rules themselves live in ``tasks.survey``; this module only bundles the survey inputs of a
build (results, reading comprehension, overrides, the exported questions) and turns the
stage's outcome into what the release folder holds: the surviving templates, the decisions,
``funnel.md`` and ``survey_agreement.md``.

The inputs are read by ``tasks.survey.inputs.load_survey_data``, the loader ``kobbq survey ingest``
uses too, so both behave alike: without an overrides file the profile's
``survey/<profile>/overrides.csv`` applies (``SurveyInputs.resolve(profile)`` names it, so that a
caller hashing ``files()`` for a fingerprint includes it). Unlike the ingest command, the build
accepts survey results that match no template (a released template file holds only the survivors);
each is recorded as a ``result-without-template`` decision and counted in ``funnel.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kobbq.errors import UserError
from kobbq.profile import Profile
from tasks.decisions import Decision
from tasks.templates import Template


@dataclass(frozen=True)
class SurveyInputs:
    results: Path  # released JSON, or respondent-level CSV/xlsx
    reading: Path | None = None
    overrides: Path | None = None
    questions: Path | None = None  # the exported questions.csv, for respondent-level results

    def files(self) -> dict[str, Path]:
        files = {"survey_results": self.results, "reading_results": self.reading,
                 "survey_overrides": self.overrides, "survey_questions": self.questions}
        return {role: path for role, path in files.items() if path is not None}

    def resolve(self, profile: Profile) -> SurveyInputs:
        """The same inputs with the overrides file that will be used: the given one, else the profile's default."""
        from tasks.survey.inputs import default_overrides_path

        return replace(self, overrides=self.overrides or default_overrides_path(profile))

    def check_exist(self) -> None:
        for role, path in self.files().items():
            if not path.exists():
                raise UserError(f"{role.replace('_', ' ')} file does not exist", path)


@dataclass(frozen=True)
class SurveyStage:
    kept: list[Template]
    decisions: list[Decision]
    reports: dict[str, str]  # file name in the release folder -> text


def survey_stage(templates: list[Template], inputs: SurveyInputs, profile: Profile) -> SurveyStage:
    from tasks.survey.inputs import apply_survey_rules, load_survey_data

    data = load_survey_data(profile, inputs.results, inputs.reading, inputs.overrides, inputs.questions)
    outcome = apply_survey_rules(templates, data, profile, allow_unmatched=True)
    reports = {"funnel.md": outcome.funnel_markdown(), "survey_agreement.md": outcome.agreement_markdown()}
    return SurveyStage(outcome.kept, outcome.decisions, reports)
