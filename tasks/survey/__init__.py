"""The survey stage: questionnaires out, responses in, the paper's filters, every decision on record. Its one function
is ``survey_stage.survey_stage(templates, inputs, profile)``, which every entry point calls; the data flows through
``stereotypes`` and ``survey_export_stage`` (the questions sent out), ``inputs`` and ``results`` (the answers read),
``rule_table``, ``rules`` and ``apply`` (the rules), and ``funnel`` (the reports)."""
