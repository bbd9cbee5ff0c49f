"""``kobbq build``: a pipeline file (with no arguments, the embedded example's), or a pipeline made from the
arguments (``--templates FILE``, with the survey's files), run by the one runner (``tasks.pipeline.run``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.domains import check_release_name
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR, EXAMPLE_PIPELINE
from core.profile import profile_file
from kobbq.arguments import OVERRIDES_HELP, add_corrections, add_profile, add_quiet, corrections_file, profile_of
from kobbq.in_prefect import launcher


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build", help="run the pipeline (default: the embedded example) or build from one template file",
        description="With --pipeline FILE (default: the embedded example, templates_raw/example/pipeline.toml) "
                    "run every stage whose inputs exist and stop at the first that waits for people. With "
                    "--templates FILE, validate that template file, apply the survey filters if results are "
                    "given, expand it and publish <out>/<name>/ atomically.")
    parser.add_argument("--pipeline", type=Path, default=None,
                        help="run the whole pipeline described by this file (labels, translation, post-edit, "
                             "survey, release); see templates_raw/real/kobbq_release.toml")
    add_profile(parser)
    parser.add_argument("--templates", type=Path, default=None,
                        help="KoBBQ-format template TSV: build from it directly (no pipeline)")
    add_corrections(parser, "apply no corrections file")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR, help="build folder (default: %(default)s)")
    parser.add_argument("--name", default=None, help="release folder name (default: the profile's release name)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the evaluation split (default: the profile's)")
    parser.add_argument("--test-split", choices=("profile", "seeded"), default=None,
                        help="profile (default): the test split's IDs the profile lists (ko: KoBBQ's official "
                             "split; templates that cannot produce them are an error), else one fill per template "
                             "row drawn with the seed; seeded: the seeded draw even when the profile lists IDs")
    survey = parser.add_argument_group("survey stage (optional: without results, every template is kept)")
    survey.add_argument("--survey-results", type=Path, default=None,
                        help="survey results: the released JSON format, or respondent-level CSV/xlsx")
    survey.add_argument("--reading-results", type=Path, default=None, help="reading-comprehension results CSV/xlsx")
    survey.add_argument("--overrides", type=Path, default=None, help=OVERRIDES_HELP)
    survey.add_argument("--questions", type=Path, default=None,
                        help="the exported questions.csv (for respondent-level results; default: beside them)")
    survey.add_argument("--allow-unmatched", action="store_true",
                        help="accept survey results that match no template (when the templates are the survivors "
                             "of an earlier survey, e.g. a released template file); each is recorded")
    parser.add_argument("--force", action="store_true", help="rebuild even when the release is up to date")
    add_quiet(parser)
    parser.set_defaults(handler=run)


# Options a pipeline run would otherwise silently ignore: its file sets them.
PIPELINE_SETS = ("profile", "corrections", "no_corrections", "name", "seed", "test_split", "reading_results",
                 "overrides", "questions", "allow_unmatched")


def run(args: argparse.Namespace) -> int:
    if args.profile is not None:
        profile_file(args.profile)  # an unknown profile is the first thing to say (found without loading it)
    if args.name is not None:
        check_release_name(args.name)
    if args.templates is None and args.survey_results is None:
        ignored = [f"--{name.replace('_', '-')}" for name in PIPELINE_SETS if getattr(args, name) not in (None, False)]
        if ignored:
            raise UserError(f"{', '.join(ignored)}: a pipeline takes these from its file "
                            f"({args.pipeline or EXAMPLE_PIPELINE}); give --templates FILE to build from one file")
    elif args.pipeline is not None:
        raise UserError("--pipeline takes its inputs from the pipeline file; drop --templates / --survey-results")
    elif args.templates is None:
        raise UserError("--survey-results needs --templates (or use a pipeline file)")
    # The runner, the stages and their libraries: not for --help.
    from tasks.pipeline import plan as plans, run as runner

    if args.templates is None:
        plan = plans.pipeline_plan(args.pipeline or EXAMPLE_PIPELINE, args.out, args.force)
    else:
        profile = profile_of(args)
        corrections = corrections_file(args, profile)
        survey_files = survey_inputs(args, profile)
        survey = plans.SurveyInputs(*survey_files, allow_unmatched=args.allow_unmatched) if survey_files else None
        if survey is not None:
            survey.check_exist()
        plan = plans.templates_plan(args.templates, args.out, profile, args.name, corrections, args.seed,
                                    args.test_split or "profile", survey, args.force)
    return report(plan, runner.execute(plan, launcher(args)), args)


def survey_inputs(args: argparse.Namespace, profile) -> tuple[Path | None, ...] | None:
    """The survey's files of the command, if any (``tasks.survey.inputs.SurveyInputs``'s arguments)."""
    given = [args.reading_results, args.overrides, args.questions]
    if args.survey_results is None:
        if any(given) or args.allow_unmatched:
            raise UserError("--reading-results, --overrides, --questions and --allow-unmatched need --survey-results")
        return None
    if not profile.survey.enabled:
        raise UserError(f"profile {profile.name} has no survey stage ([survey] enabled = false); drop --survey-results")
    return (args.survey_results, *given)


def report(plan, result, args: argparse.Namespace) -> int:  # (Plan, PipelineResult | None, ...)
    """What the build came to; a pipeline that waits says for what, what to send out or set, and that the same command
    resumes."""
    if result is not None and result.failed:
        raise UserError(f"stage {result.stage} failed; nothing after it ran:\n{result.message}")
    if args.templates is not None:
        state = plan.ctx.state(plan.stages[-1].name)  # the release's counts as its stage recorded them
        summary = state.message if state else ""
        print(f"{plan.ctx.folder.path}: {'up to date' if result is None else 'built'}, {summary}")
    elif result is None:
        print(f"{plan.ctx.folder.path}: up to date (every stage's inputs unchanged, its outputs intact); "
              "nothing rebuilt")
    elif not result.finished:
        waiting = result.waiting
        said = f"{waiting.waits_for}.\n{waiting.send_out}" if waiting and waiting.send_out else result.message
        out = "" if args.out == DEFAULT_BUILD_DIR else f" --out {args.out}"
        print(f"waiting at stage {result.stage}: {said}\nRe-run the same command once it has arrived; finished "
              f"stages are not redone (`kobbq status --pipeline {args.pipeline or EXAMPLE_PIPELINE}{out}` shows "
              "every stage).")
    else:
        print(f"{result.release_dir}: {result.message}")
    return 0
