"""The survey stage as the build sees it: which files, and what it contributes to a release.

The rules themselves live in ``tasks.survey``; this module only bundles the survey inputs of a
build (results, reading comprehension, overrides, the exported questions) and turns the
stage's outcome into what the release folder holds: the surviving templates, the decisions,
``funnel.md`` and ``survey_agreement.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    from tasks.survey import filter_templates, load_overrides, load_reading_results, load_survey_results

    results = load_survey_results(inputs.results, profile, inputs.questions)
    reading = load_reading_results(inputs.reading) if inputs.reading else None
    overrides = load_overrides(inputs.overrides) if inputs.overrides else []
    outcome = filter_templates(templates, results, reading, overrides, profile)
    reports = {"funnel.md": outcome.funnel_markdown(), "survey_agreement.md": outcome.agreement_markdown()}
    return SurveyStage(outcome.kept, outcome.decisions, reports)
