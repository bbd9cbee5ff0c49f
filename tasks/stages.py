"""The stages of a pipeline, in the order they run, and how each is fingerprinted.

The release stage comes last and is run by the build flow (``flows/build.py``) with everything the
stages before it recorded. Nothing here starts Prefect: ``kobbq status`` compares these
fingerprints with the recorded ones without a server.
"""

from __future__ import annotations

from pathlib import Path

from core.decisions import read_decisions
from core.fingerprint import fingerprint
from core.pipeline_file import STAGES, Pipeline, is_current, read_state
from core.profile import load_profile
from core.release_folder import check_release_name, release_is_current
from tasks.labels.stage import STAGE as LABELS
from tasks.release.assemble import expand_release
from tasks.release.inputs import release_inputs
from tasks.release.test_split import LISTED
from tasks.stage import Context, Stage
from tasks.survey.export_stage import STAGE as SURVEY_EXPORT
from tasks.survey.stage import STAGE as SURVEY
from tasks.survey.stage import pipeline_inputs, survivors
from tasks.templates.stage import STAGE as TEMPLATES
from tasks.translation.postedit_stage import STAGE as POSTEDIT
from tasks.translation.pretranslate_stage import STAGE as PRETRANSLATE
from tasks.templates.validate import load_checked

PEOPLE_STAGES: list[Stage] = [LABELS, PRETRANSLATE, POSTEDIT, TEMPLATES, SURVEY_EXPORT, SURVEY]
RELEASE = "release"
assert [s.name for s in PEOPLE_STAGES] + [RELEASE] == STAGES


def context(pipeline: Pipeline, out: Path) -> Context:
    profile = load_profile(pipeline.profile)
    return Context(pipeline, profile, Path(out), check_release_name(pipeline.config.name or profile.release.name))


def stage_fingerprint(ctx: Context, stage: Stage) -> str:
    upstream = {f"decisions_{name}": path for name, path in ctx.upstream.items()}
    return fingerprint({**stage.inputs(ctx), **upstream, "profile": ctx.profile.path})


def stage_reports(ctx: Context) -> dict[str, Path]:
    """Reports the stages recorded (roles ``report:<name>``), to be copied into the release."""
    reports = {}
    for stage in PEOPLE_STAGES:
        state = read_state(ctx.states, stage.name)
        for role, path in (state.outputs.items() if state else ()):
            if role.startswith("report:") and Path(path).exists():
                reports[role.removeprefix("report:")] = Path(path)
    return reports


def release_fingerprint(ctx: Context) -> str:
    """What the release is built from: the template file, the survey inputs, every stage's decisions."""
    files = {"templates": ctx.output("templates", "templates"), **pipeline_inputs(ctx).files(),
             **{f"decisions_{name}": path for name, path in ctx.upstream.items()}}
    return fingerprint(files)


def current_fingerprints(pipeline: Pipeline, out: Path) -> dict[str, str | None]:
    """Each stage's fingerprint now, for ``kobbq status`` (inputs not there yet count as missing)."""
    ctx = context(pipeline, out)
    prints: dict[str, str | None] = {}
    for stage in PEOPLE_STAGES:
        prints[stage.name] = stage_fingerprint(ctx, stage)
        decisions = ctx.decisions_file(stage.name)
        if decisions.exists():
            ctx.upstream[stage.name] = decisions
    prints[RELEASE] = release_fingerprint(ctx)
    return prints


def release_arguments(ctx: Context) -> dict[str, object]:
    """What the release stage is built from, as the build flow's arguments (``flows.build.build_release``)."""
    survey = pipeline_inputs(ctx)
    machine = ctx.output("pretranslate", "mt_templates")
    return {"profile_name": ctx.pipeline.profile, "templates": ctx.output("templates", "templates"),
            "out": ctx.out, "name": ctx.name, "seed": ctx.pipeline.config.seed,
            "test_split": ctx.pipeline.config.test_split, "corrections": ctx.corrections,
            "survey_files": survey.files() if survey.results else None,
            "survey_decisions": ctx.upstream.get("survey") if survey.results else None,
            "upstream": dict(ctx.upstream), "parallel": {"mtBBQ": machine} if machine else {},
            "reports": stage_reports(ctx)}


def check_test_split(ctx: Context) -> None:
    """The release's listed test split against the templates the stages kept, before the build flow starts:
    templates that cannot produce it stop the pipeline in one paragraph, as a failed stage does (pure, ~1 s)."""
    arguments = release_arguments(ctx)
    split = release_inputs(ctx.profile, arguments["templates"], arguments["corrections"], arguments["seed"],
                           test_split=arguments["test_split"]).test_split
    if split.method != LISTED:
        return  # the seeded draw fits any templates
    loaded, _ = load_checked(arguments["templates"], arguments["corrections"], ctx.profile)
    decisions = arguments["survey_decisions"]
    kept = survivors(loaded.templates, read_decisions(decisions)) if decisions else loaded.templates
    expand_release(kept, ctx.profile, split.seed, split=split)


def pipeline_is_current(pipeline: Pipeline, out: Path) -> bool:
    """Every stage done with unchanged inputs and the published release intact: nothing to do, and no need
    to start Prefect to find that out."""
    ctx = context(pipeline, out)
    for stage in PEOPLE_STAGES:
        if not is_current(read_state(ctx.states, stage.name), stage_fingerprint(ctx, stage)):
            return False
        ctx.upstream[stage.name] = ctx.decisions_file(stage.name)
    arguments = release_arguments(ctx)
    if arguments["templates"] is None:
        return False
    inputs = release_inputs(ctx.profile, arguments["templates"], arguments["corrections"], arguments["seed"],
                            arguments["survey_files"], arguments["upstream"], arguments["parallel"],
                            arguments["reports"], arguments["test_split"])
    return release_is_current(ctx.out / ctx.name, inputs.fingerprint())
