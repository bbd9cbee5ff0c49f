"""The survey stage: questionnaires out, responses in, the paper's filters, every decision on record.

The stage's one function is ``tasks.survey.survey_stage.survey_stage(templates, inputs, profile) -> SurveyStage``
(the pipeline, ``kobbq build --templates --survey-results`` and ``kobbq survey ingest`` all call it):
``SurveyInputs`` (which files; ``tasks.survey.inputs``) are read into ``SurveyData`` (their contents,
checked), and ``apply_survey_rules(templates, data, profile, allow_unmatched=False) -> SurveyOutcome``
(``tasks.survey.apply``) runs the rules: ``.kept`` (template rows, input order), ``.decisions`` (one per
(stereotype or template, rule); overrides marked ``override=True``). ``funnel.render_funnel(outcome)``
and ``group_check.render_group_check(outcome)`` render ``funnel.md`` and ``survey_agreement.md``.

Modules, in the order the data flows:

- before the survey: ``stereotypes`` (unique questions + survey type), ``groups`` (group lists),
  ``survey_export_stage`` (the stage: questionnaires rendered with jinja2, the xlsx/CSV vendor export);
- reading the results: ``results`` (what a result is, the vote checks), ``overrides`` (curated decisions, and
  the index that claims them by subject), ``inputs`` (every input read one way: the released JSON, respondent
  rows counted into votes and the quota, reading comprehension);
- running the rules: ``rules`` (the paper's rules as pure functions), ``apply`` (each question, then each
  template), ``outcome`` (what they produced);
- reporting: ``funnel``, ``group_check``, ``votes``; ``survey_stage`` (the stage, and what it and
  ``kobbq survey ingest`` write).
"""
