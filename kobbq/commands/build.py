"""``kobbq build``: run the build flow; with no arguments, on the embedded example."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from core import console, interrupt
from core.atomic import check_writable
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR, EXAMPLE_PIPELINE
from core.profile import load_profile
from core.release_folder import check_release_name, check_replaceable
from core.runtime import configure_environment
from kobbq.arguments import OVERRIDES_HELP


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
    parser.add_argument("--profile", default=None, help="culture profile name or .toml path (default: ko)")
    parser.add_argument("--templates", type=Path, default=None,
                        help="KoBBQ-format template TSV: build from it directly (no pipeline)")
    parser.add_argument("--corrections", type=Path, default=None,
                        help="corrections CSV applied before validation (default: the profile's corrections.csv)")
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


def resolve_corrections(args: argparse.Namespace) -> Path | None:
    """--corrections, else the profile folder's corrections file when it has one (ko does)."""
    if args.no_corrections:
        return None
    if args.corrections is not None:
        if not args.corrections.exists():
            raise UserError("corrections file does not exist", args.corrections)
        return args.corrections
    return load_profile(getattr(args, "profile", None) or "ko").existing_file("corrections")


def survey_inputs(args: argparse.Namespace, profile):
    from tasks.survey.inputs import SurveyInputs

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


PIPELINE_SETS = ("profile", "corrections", "no_corrections", "name", "seed", "test_split", "reading_results",
                 "overrides", "questions", "allow_unmatched")


def pipeline_ignores(args: argparse.Namespace) -> list[str]:
    """Options a pipeline run would otherwise silently ignore: its file sets them."""
    return [f"--{name.replace('_', '-')}" for name in PIPELINE_SETS if getattr(args, name) not in (None, False)]


def prepare_build_folder(out: Path, target: Path) -> None:
    """Before Prefect starts: the build folder can be written, processes a killed build left running are
    ended, and its staging or half-published folders are cleaned up (also when nothing is rebuilt)."""
    from tasks.release.publish import recover

    check_writable(out)
    for ended in interrupt.reap_orphans(out):
        console.step(f"ended {ended}, left running by a build that was killed")
    recover(target)


def run_pipeline_file(path: Path, args: argparse.Namespace) -> int:
    from core.pipeline_file import check_start_inputs, check_states, load_pipeline, state_dir
    from tasks.release.publish import build_lock
    from tasks.stages import context, pipeline_is_current

    pipeline = load_pipeline(path)
    check_start_inputs(pipeline)  # a mistyped path is an error now, not a stage waiting after Prefect's start-up
    target = args.out / context(pipeline, args.out).name
    check_replaceable(target)  # a folder this project did not write is never replaced
    for removed in check_states(state_dir(args.out, target.name), rewrite=args.force):
        console.step(f"{removed}: unreadable, removed (--force); its stage runs again")
    prepare_build_folder(args.out, target)
    with build_lock(target):
        if not args.force and pipeline_is_current(pipeline, args.out):
            print(f"{target}: up to date (every stage's inputs unchanged, release intact); nothing rebuilt")
            return 0
        configure_environment()
        from flows.pipeline import run_pipeline

        result = run_pipeline(pipeline, out=args.out, force=args.force)
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


def run(args: argparse.Namespace) -> int:
    from tasks.release.publish import build_lock

    console.set_quiet(args.quiet)
    profile = load_profile(args.profile or "ko")
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
    target = args.out / check_release_name(profile.release.name if args.name is None else args.name)
    check_replaceable(target)  # a folder this project did not write is never replaced
    if unchanged(args, profile, target):
        prepare_build_folder(args.out, target)  # a killed build's leftovers go, even now
        result = up_to_date(target)
    else:
        checked = check_inputs(args, profile)  # bad input fails before anything is written
        prepare_build_folder(args.out, target)
        with build_lock(target):
            result = build_direct(args, profile, target, checked)
    state = "up to date" if result.up_to_date else "built"
    print(f"{result.release_dir}: {state}, {result.samples:,} samples, {result.test_samples:,} in the test split")
    return 0


@dataclass(frozen=True)
class CheckedInputs:
    corrections: Path | None
    survey: object  # SurveyInputs | None
    stage: object  # the survey stage's outcome (SurveyStage) | None


def check_inputs(args: argparse.Namespace, profile) -> CheckedInputs:
    """Read and check every input, run the survey rules and choose the test split (pure, sub-second): nothing is
    written, and templates that do not fit the profile's listed test split fail before Prefect starts."""
    from tasks.release.assemble import expand_release
    from tasks.release.inputs import release_inputs
    from tasks.survey.stage import survey_stage
    from tasks.templates.validate import load_checked

    corrections = resolve_corrections(args)
    survey = survey_inputs(args, profile)
    loaded, _ = load_checked(args.templates, corrections, profile)
    stage = survey_stage(loaded.templates, survey, profile) if survey else None
    if profile.templates.workbook is None:  # a generated release has no test split to check
        split = release_inputs(profile, args.templates, corrections, args.seed,
                               test_split=asked_test_split(args)).test_split
        expand_release(stage.kept if stage else loaded.templates, profile, split.seed, split=split)
    return CheckedInputs(corrections, survey, stage)


def asked_test_split(args: argparse.Namespace) -> str:
    return args.test_split or "profile"


@dataclass(frozen=True)
class UpToDate:
    release_dir: Path
    samples: int
    test_samples: int
    up_to_date: bool = True


def up_to_date(target: Path) -> UpToDate:
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    return UpToDate(target, manifest["samples"], manifest["test_samples"])


def unchanged(args: argparse.Namespace, profile, target: Path) -> bool:
    """Without a survey, the release's fingerprint needs only the input files: compare it with the published
    manifest before reading anything (an unchanged input was valid when it was built)."""
    from core.release_folder import release_is_current
    from tasks.release.inputs import release_inputs

    if args.force or args.survey_results is not None:
        return False
    inputs = release_inputs(profile, args.templates, resolve_corrections(args), args.seed,
                            test_split=asked_test_split(args))
    return release_is_current(target, inputs.fingerprint())


def build_direct(args: argparse.Namespace, profile, target: Path, checked: CheckedInputs):
    """Everything decidable before Prefect starts is decided here: the survey stage's outcome is recorded
    once (the flow reads its decisions), and an up-to-date release is not rebuilt."""
    from core.release_folder import release_is_current
    from tasks.release.inputs import release_inputs
    from tasks.survey.stage import record_for_release

    recorded = None
    if checked.stage is not None:
        recorded = record_for_release(checked.stage, target.with_name(f"{target.name}.work") / "survey")
    arguments = {"templates": args.templates, "corrections": checked.corrections, "seed": args.seed,
                 "survey_files": checked.survey.files() if checked.survey else None,
                 "upstream": {"survey": recorded.decisions} if recorded else None,
                 "reports": recorded.reports if recorded else None, "test_split": asked_test_split(args)}
    # Without a survey, ``unchanged`` has already compared this fingerprint; with one, it needs the decisions.
    if recorded and not args.force and release_is_current(target, release_inputs(profile, **arguments).fingerprint()):
        return up_to_date(target)
    configure_environment()
    from flows.build import build_release

    return build_release(profile_name=args.profile or "ko", out=args.out, name=args.name,
                         survey_decisions=recorded.decisions if recorded else None, force=args.force, **arguments)
