"""The survey stage: questionnaires out, responses in, the paper's filters, every decision on record.

Entry points for the build flow (pure; no Prefect needed):

- ``tasks.survey.inputs.load_survey_data(profile, results, reading=None, overrides=None, questions=None)
  -> SurveyData`` reads every survey input the one way both ``kobbq survey ingest`` and the build
  (``tasks.survey.stage.survey_stage``) use (the profile's default overrides when none is given), and
  ``apply_survey_rules(templates, data, profile, allow_unmatched) -> SurveyOutcome`` applies the rules
  (results matching no template: always recorded; rejected unless ``allow_unmatched``).

The pieces those two compose:

- ``load_survey_results(path: Path, profile: Profile, questions: Path | None = None) -> SurveyResults``
  the released aggregated JSON, or a respondent-level CSV/xlsx (aggregated, quota-checked;
  ``questions`` = the exported ``questions.csv``, by default the one beside the file).
- ``load_reading_results(path: Path, questions: Path | None = None) -> ReadingResults``
- ``load_overrides(path: Path) -> list[Override]``  (``survey/<profile>/overrides.csv``)
- ``filter_templates(templates: list[TemplateRow], results: SurveyResults, reading: ReadingResults | None,
  overrides: list[Override], profile: Profile) -> SurveyOutcome``
  ``SurveyOutcome.kept`` (template rows, input order), ``.decisions`` (one per (stereotype or
  template, rule); overrides marked ``override=True``); ``funnel.render_funnel(outcome)`` -> ``funnel.md`` text,
  ``agreement.render_agreement(outcome)`` -> ``survey_agreement.md`` text (both deterministic).

Before the survey: ``collect_stereotypes`` (unique questions + survey type) and
``tasks.survey.questionnaires`` (jinja2 rendering, xlsx/CSV vendor export).
Modules: ``rules`` (the paper's rules as pure functions), ``stereotypes``, ``groups``, ``results``,
``overrides``, ``filter`` (applies the rules), ``outcome`` (what they produced), ``funnel`` and ``agreement``
(render it), ``questionnaires`` and ``export`` (before the survey), ``stage`` (the pipeline stage).
"""

from tasks.survey.filter import filter_templates
from tasks.survey.outcome import StereotypeEvaluation, SurveyOutcome, TemplateEvaluation
from tasks.survey.overrides import Override, load_overrides
from tasks.survey.results import ReadingResults, SurveyResult, SurveyResults, load_reading_results, load_survey_results
from tasks.survey.stereotypes import Stereotype, collect_stereotypes

__all__ = [
    "Override", "ReadingResults", "Stereotype", "StereotypeEvaluation", "SurveyOutcome", "SurveyResult",
    "SurveyResults", "TemplateEvaluation", "collect_stereotypes", "filter_templates", "load_overrides",
    "load_reading_results", "load_survey_results",
]
