"""A pipeline's stages, in the order they run, and how each is fingerprinted and skipped.

``context(pipeline, out)`` is the one place a pipeline's profile is loaded: the command makes the
context once and hands it to ``pipeline_is_current`` (before Prefect starts) and to the pipeline's flow
(``flows/pipeline.py``). ``each_stage`` is the one walk over the stages (fingerprint, recorded state,
current or not) that the flow, ``pipeline_is_current`` and ``kobbq status`` share. The release stage
comes last: ``release_request`` is what the stages before it recorded, as the build flow's request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from core.decisions import read_decisions
from core.fingerprint import fingerprint
from core.pipeline_file import STAGES, Pipeline, StageState, is_current, read_state
from core.profile import load_profile
from core.release_folder import ReleaseFolder
from tasks.labels.labels_stage import STAGE as LABELS
from tasks.release.assemble import expand_release
from tasks.release.inputs import ReleaseRequest
from tasks.release.test_split import LISTED
from tasks.stage_contract import Context, Stage
from tasks.survey.survey_export_stage import STAGE as SURVEY_EXPORT
from tasks.survey.survey_stage import STAGE as SURVEY
from tasks.survey.survey_stage import pipeline_inputs, survivors
from tasks.templates.templates_stage import STAGE as TEMPLATES
from tasks.templates.validate import load_checked
from tasks.translation.postedit_stage import STAGE as POSTEDIT
from tasks.translation.pretranslate_stage import STAGE as PRETRANSLATE

PEOPLE_STAGES: list[Stage] = [LABELS, PRETRANSLATE, POSTEDIT, TEMPLATES, SURVEY_EXPORT, SURVEY]
RELEASE = "release"
assert [s.name for s in PEOPLE_STAGES] + [RELEASE] == STAGES


def context(pipeline: Pipeline, out: Path) -> Context:
    """The pipeline's context in the build folder ``out``: its profile, loaded here once per command."""
    profile = load_profile(pipeline.profile)
    return Context(pipeline, profile, ReleaseFolder.of(out, pipeline.config.name or None, profile))


def stage_fingerprint(ctx: Context, stage: Stage) -> str:
    upstream = {f"decisions_{name}": path for name, path in ctx.upstream.items()}
    return fingerprint({**stage.inputs(ctx), **upstream, "profile": ctx.profile.path})


@dataclass(frozen=True)
class StageCheck:
    stage: Stage
    fingerprint: str  # of its inputs now
    state: StageState | None  # as recorded by its last run
    current: bool  # done with these inputs, its outputs still there: nothing to do


def each_stage(ctx: Context) -> Iterator[StageCheck]:
    """The stages in order, each with its fingerprint and recorded state; after each, its decisions (when it
    has any, e.g. once the caller has run it) become the later stages' upstream. The caller stops where it
    wants (a stage not current, a stage that waits). Every walk starts from the first stage: the upstream an
    earlier walk of the same context collected (the command's up-to-date check) is not carried into it."""
    ctx.upstream.clear()
    for stage in PEOPLE_STAGES:
        current = stage_fingerprint(ctx, stage)
        state = read_state(ctx.states, stage.name)
        yield StageCheck(stage, current, state, is_current(state, current))
        if ctx.decisions_file(stage.name).exists():
            ctx.upstream[stage.name] = ctx.decisions_file(stage.name)


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
    """What the release stage's state records: the template file, the survey inputs, every stage's decisions."""
    files = {"templates": ctx.output("templates", "templates"), **pipeline_inputs(ctx).files(),
             **{f"decisions_{name}": path for name, path in ctx.upstream.items()}}
    return fingerprint(files)


def current_fingerprints(ctx: Context) -> dict[str, str | None]:
    """Each stage's fingerprint now, for ``kobbq status`` (inputs not there yet count as missing)."""
    prints: dict[str, str | None] = {check.stage.name: check.fingerprint for check in each_stage(ctx)}
    prints[RELEASE] = release_fingerprint(ctx)
    return prints


def release_request(ctx: Context, force: bool = False) -> ReleaseRequest | None:
    """What the release stage is built from, as the build flow's request; None before the templates stage
    has recorded its template file."""
    templates = ctx.output("templates", "templates")
    if templates is None:
        return None
    survey = pipeline_inputs(ctx)
    machine = ctx.output("pretranslate", "mt_templates")
    return ReleaseRequest(ctx.profile, ctx.folder, templates, ctx.corrections, ctx.pipeline.config.seed,
                          ctx.pipeline.config.test_split,
                          survey_files=survey.files() if survey.results else {},
                          survey_decisions=ctx.upstream.get("survey") if survey.results else None,
                          upstream=dict(ctx.upstream), parallel={"mtBBQ": machine} if machine else {},
                          reports=stage_reports(ctx), rebuild=force)


def check_test_split(request: ReleaseRequest) -> None:
    """The release's listed test split against the templates the stages kept, before the build flow starts:
    templates that cannot produce it stop the pipeline in one paragraph, as a failed stage does (pure, ~1 s)."""
    split = request.inputs().test_split
    if split.method != LISTED:
        return  # the seeded draw fits any templates
    loaded, _ = load_checked(request.templates, request.corrections, request.profile)
    decisions = request.survey_decisions
    kept = survivors(loaded.templates, read_decisions(decisions)) if decisions else loaded.templates
    expand_release(kept, request.profile, split.seed, split=split)


def pipeline_is_current(ctx: Context) -> bool:
    """Every stage done with unchanged inputs and the published release intact: nothing to do, and no need
    to start Prefect to find that out."""
    if not all(check.current for check in each_stage(ctx)):
        return False
    request = release_request(ctx)
    return request is not None and request.current() is not None
