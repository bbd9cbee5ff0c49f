"""``kobbq survey export`` (before the survey) and ``kobbq survey ingest`` (after it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import EXAMPLE_TEMPLATES
from core.pipeline_file import PipelineConfig, SurveySection, TemplatesSection
from kobbq.arguments import OVERRIDES_HELP, add_profile, add_quiet, blank, default_said, profile_of, shown
from kobbq.in_prefect import run_alone


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("survey", help="survey questionnaires out, responses in, the paper's filters",
                                   description="Before the survey: export the questionnaires. After it: ingest "
                                               "the responses and apply the paper's rules.")
    commands = parser.add_subparsers(dest="survey_command", metavar="STEP", required=True)

    export = commands.add_parser("export", help="write the questionnaires (xlsx + CSV) for the survey company",
                                 description="Collect the unique stereotypes of the candidate templates, choose "
                                             "each one's question type, and write questionnaire.xlsx, "
                                             "questions.csv, reading_questions.csv, groups.csv and "
                                             "decisions_survey.csv into --out.")
    _common(export)
    export.set_defaults(handler=run)

    ingest = commands.add_parser("ingest", help="read survey results and apply the paper's rules",
                                 description="Read the results (released JSON format, or respondent-level "
                                             "CSV/xlsx with the exported questions.csv), check the quota, apply "
                                             "the rules and overrides, and write decisions_survey.csv/.parquet, "
                                             "funnel.md, survey_agreement.md, survey_votes.csv, survey_results.json and "
                                             "quota_shortfalls.csv into --out (the release copies the first four).")
    _common(ingest)
    ingest.add_argument("--results", type=Path, required=True,
                        help="survey results: .json (released format) or respondent-level .csv/.xlsx")
    ingest.add_argument("--questions", type=Path, default=None,
                        help="the exported questions.csv for respondent-level results (default: beside --results)")
    ingest.add_argument("--reading", type=Path, default=None,
                        help="reading-comprehension results (category,template_id,correct,total or respondent answers)")
    ingest.add_argument("--overrides", type=Path, default=None, help=OVERRIDES_HELP)
    ingest.add_argument("--allow-unmatched", action="store_true",
                        help="accept results that match no template (when the templates are survivors only)")
    ingest.set_defaults(handler=run)


def _common(parser: argparse.ArgumentParser) -> None:
    add_profile(parser)
    parser.add_argument("--templates", type=Path, default=None,
                        help="candidate templates, KoBBQ-format TSV (default: the embedded example, "
                             f"{shown(EXAMPLE_TEMPLATES)})")
    parser.add_argument("--corrections", type=Path, default=None, help="corrections CSV applied to the templates")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    add_quiet(parser)


def run(args: argparse.Namespace) -> int:
    """The step named: its stage alone (the runner imports the stage's module and libraries when it runs)."""
    templates = TemplatesSection(corrections=blank(args.corrections), file=str(
        args.templates or default_said("the embedded example's Korean templates", EXAMPLE_TEMPLATES, "--templates")))
    survey = SurveySection()
    if args.survey_command == "ingest":
        survey = SurveySection(results=str(args.results), reading=blank(args.reading),
                               overrides=blank(args.overrides), questions=blank(args.questions),
                               allow_unmatched=args.allow_unmatched)
    profile = profile_of(args)
    config = PipelineConfig(profile=profile.argument, templates=templates, survey=survey)
    stage = "survey-export" if args.survey_command == "export" else "survey"
    c = run_alone(stage, config, profile, args.out, args).counts
    if args.survey_command == "export":
        print(f"{args.out}: {c['questions']} questions ({c['type1']} type 1, {c['type2']} type 2), "
              f"{c['reading_questions']} reading-comprehension questions")
    else:
        print(f"{args.out}: kept {c['kept']} of {c['template_ids']} templates ({c['kept_rows']} rows), "
              f"{c['stereotypes_kept']} of {c['stereotypes']} stereotypes; {c['unmatched_results']} unmatched "
              f"result(s); {c['quota_shortfalls']} quota shortfall(s)")
    return 0
