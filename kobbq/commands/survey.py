"""``kobbq survey export`` (before the survey) and ``kobbq survey ingest`` (after it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core import console
from core.paths import EXAMPLE_TEMPLATES
from kobbq.arguments import OVERRIDES_HELP, add_profile, profile_of, shown
from tasks.survey.ingest import IngestRequest, check_ingest
from tasks.survey.inputs import SurveyInputs


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
    export.set_defaults(handler=run_export)

    ingest = commands.add_parser("ingest", help="read survey results and apply the paper's rules",
                                 description="Read the results (released JSON format, or respondent-level "
                                             "CSV/xlsx with the exported questions.csv), check the quota, apply "
                                             "the rules and overrides, and write decisions_survey.csv/.parquet, "
                                             "funnel.md, survey_agreement.md, survey_votes.csv, survey_results.json and "
                                             "quota_shortfalls.csv into --out.")
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
    ingest.set_defaults(handler=run_ingest)


def _common(parser: argparse.ArgumentParser) -> None:
    add_profile(parser)
    parser.add_argument("--templates", type=Path, default=EXAMPLE_TEMPLATES,
                        help="candidate templates, KoBBQ-format TSV (default: the embedded example, "
                             f"{shown(EXAMPLE_TEMPLATES)})")
    parser.add_argument("--corrections", type=Path, default=None, help="corrections CSV applied to the templates")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def run_export(args: argparse.Namespace) -> int:
    console.set_quiet(args.quiet)
    from flows.survey import export_survey  # Prefect, imported once kobbq.cli has set its settings

    result = export_survey(profile_name=args.profile, templates=args.templates, out=args.out,
                           corrections=args.corrections)
    print(f"{args.out}: {result.questions} questions ({result.type1} type 1, {result.type2} type 2), "
          f"{result.reading_questions} reading-comprehension questions")
    return 0


def run_ingest(args: argparse.Namespace) -> int:
    console.set_quiet(args.quiet)
    profile = profile_of(args)
    inputs = SurveyInputs(args.results, args.reading, args.overrides, args.questions, args.allow_unmatched)
    request = IngestRequest(profile, args.templates, inputs.resolve(profile), args.out, args.corrections)
    stage = check_ingest(request)  # the rules, once, before Prefect starts: a bad file fails at once and cleanly
    from flows.survey import Computed, ingest_survey  # Prefect, imported once kobbq.cli has set its settings

    result = ingest_survey(request, Computed(stage))
    print(f"{args.out}: kept {result.kept} of {result.templates} templates ({result.kept_rows} rows), "
          f"{result.stereotypes_kept} of {result.stereotypes} stereotypes; {result.unmatched_results} unmatched "
          f"result(s); {result.quota_shortfalls} quota shortfall(s)")
    return 0
