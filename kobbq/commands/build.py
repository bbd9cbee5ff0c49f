"""``kobbq build``: the arguments as one request, handed to ``tasks.build``; with no arguments, the embedded
example's pipeline."""

from __future__ import annotations

import argparse
from pathlib import Path

from core import console
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR, EXAMPLE_PIPELINE
from core.pipeline_file import check_start_inputs, check_states, load_pipeline
from core.profile import profile_file
from core.release_folder import ReleaseFolder, check_replaceable
from kobbq.arguments import OVERRIDES_HELP, add_corrections, add_profile, corrections_file, profile_of
from tasks.build.folder import build_folder
from tasks.build.request import DirectBuild
from tasks.release.inputs import BuildResult, ReleaseRequest
from tasks.release.test_split import PROFILE
from tasks.survey.inputs import SurveyInputs


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
    add_profile(parser, default=None)
    parser.add_argument("--templates", type=Path, default=None,
                        help="KoBBQ-format template TSV: build from it directly (no pipeline)")
    add_corrections(parser)
    parser.add_argument("--no-corrections", action="store_true", help="apply no corrections file")
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
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


PIPELINE_SETS = ("profile", "corrections", "no_corrections", "name", "seed", "test_split", "reading_results",
                 "overrides", "questions", "allow_unmatched")


def pipeline_ignores(args: argparse.Namespace) -> list[str]:
    """Options a pipeline run would otherwise silently ignore: its file sets them."""
    return [f"--{name.replace('_', '-')}" for name in PIPELINE_SETS if getattr(args, name) not in (None, False)]


def run(args: argparse.Namespace) -> int:
    console.set_quiet(args.quiet)
    if args.profile is not None:
        profile_file(args.profile)  # an unknown profile is the first thing to say (found without loading it)
    if args.templates is None and args.survey_results is None:
        ignored = pipeline_ignores(args)
        if ignored:
            raise UserError(f"{', '.join(ignored)}: a pipeline takes these from its file "
                            f"({args.pipeline or EXAMPLE_PIPELINE}); give --templates FILE to build from one file")
        return run_pipeline_file(args.pipeline or EXAMPLE_PIPELINE, args)
    if args.pipeline is not None:
        raise UserError("--pipeline takes its inputs from the pipeline file; drop --templates / --survey-results")
    if args.templates is None:
        raise UserError("--survey-results needs --templates (or use a pipeline file)")
    build = direct_build(args)
    check_replaceable(build.folder.path)  # a folder this project did not write is never replaced
    result = run_direct(build)
    state = "up to date" if result.up_to_date else "built"
    print(f"{result.release_dir}: {state}, {result.samples:,} samples, {result.test_samples:,} in the test split")
    return 0


def direct_build(args: argparse.Namespace) -> DirectBuild:
    """``kobbq build --templates``'s arguments as one request."""
    profile = profile_of(args)
    return DirectBuild(profile, ReleaseFolder.of(args.out, args.name, profile), args.templates,
                              corrections_file(args, profile), args.seed, args.test_split or PROFILE,
                              survey_inputs(args, profile), args.force)


def survey_inputs(args: argparse.Namespace, profile) -> SurveyInputs | None:
    given = [args.reading_results, args.overrides, args.questions]
    if args.survey_results is None:
        if any(given) or args.allow_unmatched:
            raise UserError("--reading-results, --overrides, --questions and --allow-unmatched need --survey-results")
        return None
    if not profile.survey.enabled:
        raise UserError(f"profile {profile.name} has no survey stage ([survey] enabled = false); drop --survey-results")
    inputs = SurveyInputs(args.survey_results, *given, allow_unmatched=args.allow_unmatched).resolve(profile)
    inputs.check_exist()
    return inputs


def run_direct(build: DirectBuild) -> BuildResult:
    current = build.current()
    if current is not None:
        with build_folder(build.folder, lock=False):  # a killed build's leftovers go, even now
            return current
    # The template loaders, the survey rules and pandas: imported only when the release is not up to date.
    from tasks.build.direct import check_inputs, release_request

    survey = check_inputs(build)  # bad input fails before anything is written
    with build_folder(build.folder):
        request = release_request(build, survey)
        return start_build(request) if isinstance(request, ReleaseRequest) else request


def start_build(request: ReleaseRequest) -> BuildResult:
    from flows.build import build_release  # Prefect, imported once kobbq.cli has set its settings

    return build_release(request)


def run_pipeline_file(path: Path, args: argparse.Namespace) -> int:
    # Every stage module and its libraries, imported for a pipeline run only.
    from tasks.build.pipeline import context, pipeline_is_current

    pipeline = load_pipeline(path)
    check_start_inputs(pipeline)  # a mistyped path is an error now, not a stage waiting after Prefect's start-up
    ctx = context(pipeline, args.out)
    check_replaceable(ctx.folder.path)  # a folder this project did not write is never replaced
    for removed in check_states(ctx.states, rewrite=args.force):
        console.step(f"{removed}: unreadable, removed (--force); its stage runs again")
    with build_folder(ctx.folder):
        if not args.force and pipeline_is_current(ctx):
            print(f"{ctx.folder.path}: up to date (every stage's inputs unchanged, release intact); nothing rebuilt")
            return 0
        from flows.pipeline import run_pipeline  # Prefect, imported once kobbq.cli has set its settings

        result = run_pipeline(ctx, force=args.force)
    if result.failed:
        raise UserError(f"stage {result.waiting_stage} failed; nothing after it ran:\n{result.message}")
    if not result.finished:
        out = "" if args.out == DEFAULT_BUILD_DIR else f" --out {args.out}"
        print(f"waiting at stage {result.waiting_stage}: {result.message}\n"
              f"Re-run the same command once it has arrived; finished stages are not redone "
              f"(`kobbq status --pipeline {path}{out}` shows every stage).")
        return 0
    print(f"{result.release_dir}: {result.message}")
    return 0
