"""The survey stage: questionnaires out, responses in, the paper's filters, every decision on record.

The stage's one function is ``survey_stage.survey_stage(templates, inputs, profile) -> SurveyStage``, which
every entry point calls (the pipeline, ``kobbq build --templates --survey-results``, ``kobbq survey ingest``).
Modules, in the order the data flows:

- before the survey: ``stereotypes`` (unique questions + survey type, and the group lists),
  ``survey_export_stage`` (the stage: questionnaires rendered with jinja2, the xlsx/CSV vendor export);
- reading the results: ``results`` (what a result is, the vote checks), ``overrides`` (curated decisions, and
  the index that claims them by subject), ``inputs`` (every input read one way: the released JSON, respondent
  rows counted into votes and the quota, reading comprehension);
- running the rules: ``rules`` (the paper's rules as pure functions), ``apply`` (each question, then each
  template, and what they produced);
- reporting: ``funnel`` (funnel.md and the group check); ``survey_stage`` (the stage, the votes, and what it and
  ``kobbq survey ingest`` write).
"""
