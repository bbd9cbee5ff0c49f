"""The runner's decisions, without Prefect: a pipeline's stages, their fingerprints and which are current
(``each_stage``: the one walk the flow, the up-to-date check and ``kobbq status`` share), and their inputs read
before Prefect starts (``Plan.prepare``), so that bad input stops in one line, and kept for the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from core import console
from core.errors import UserError
from core.fingerprint import code_fingerprint, content_hash, files_fingerprint, settings_text
from core.pipeline_file import (DONE, FAILED, Pipeline, PipelineConfig, StageState, SurveySection,
                                TemplatesSection, check_start_inputs, check_states, load_pipeline, pipeline_key,
                                write_state)
from core.profile import Profile, load_profile
from core.release_folder import ReleaseFolder
from core.stage_contract import Context, Stage
from tasks.pipeline.stages import STAGE_LIST, STAGE_OF, STAGES
from tasks.release.test_split import PROFILE
from tasks.survey.inputs import SurveyInputs

SURVEY, RELEASE = STAGE_OF["survey"], STAGE_OF["release"]
# Settings every stage reads: the culture's identity.
IDENTITY = ("name", "language", "source_language")
PIPELINE = "pipeline."  # a setting of the pipeline file rather than the profile


def stages_for(pipeline: Pipeline) -> list[Stage]:
    """Every stage, or from a ready template file the survey (with results) and the release."""
    cfg = pipeline.config
    if cfg.templates.file:
        return [SURVEY, RELEASE] if cfg.survey.results else [RELEASE]
    return list(STAGE_LIST)


def check_order(stages: list[Stage]) -> None:
    """Every stage reads only stages that exist and, when they are in this pipeline, run before it."""
    known, seen = {s.name for s in STAGE_LIST}, set()
    for stage in stages:
        wrong = [name for name in stage.after if name not in known or (name in {s.name for s in stages}
                                                                         and name not in seen)]
        if wrong:
            raise RuntimeError(f"stage {stage.name} reads {', '.join(wrong)}, which does not run before it")
        seen.add(stage.name)


def context(pipeline: Pipeline, out: Path, profile: Profile | None = None) -> Context:
    """The pipeline's context in the build folder ``out``; its profile loaded here, once per command."""
    profile = pipeline.release_profile(profile or load_profile(pipeline.profile))
    return Context(pipeline, profile, ReleaseFolder.of(out, pipeline.config.name, profile))


def settings_of(ctx: Context, keys: tuple[str, ...]) -> dict[str, object]:
    """The profile's (``"templates.versions"``) and pipeline file's (``"pipeline.seed"``) settings ``keys`` name."""
    values = {}
    for key in (*IDENTITY, *keys):
        value: object = ctx.pipeline.config if key.startswith(PIPELINE) else ctx.profile
        for part in key.removeprefix(PIPELINE).split("."):
            value = getattr(value, part)
        values[key] = value.model_dump() if hasattr(value, "model_dump") else (
            [v.model_dump() if hasattr(v, "model_dump") else v for v in value] if isinstance(value, list) else value)
    return values


@dataclass(frozen=True)
class StageCheck:
    stage: Stage
    parts: dict[str, str]  # hashes of what it reads, now: inputs, settings, code (``stage_parts``)
    state: StageState | None  # as recorded by its last run
    problem: str | None  # what is wrong with what its last run made: an output changed or gone, the release replaced

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(settings_text(self.parts).encode()).hexdigest()

    @property
    def current(self) -> bool:
        """Done with these inputs, and what it made is as it made it: nothing to do."""
        return (self.state is not None and self.state.status == DONE and self.state.fingerprint == self.fingerprint
                and self.problem is None)


def stage_parts(ctx: Context, stage: Stage, upstream: dict[str, str]) -> dict[str, str]:
    """Hashes of what ``stage`` reads, in the parts ``kobbq status`` names: ``inputs`` (its files, the templates it
    renders, the fingerprints of the stages it reads, ``upstream``), ``settings`` and ``code`` (its modules)."""
    after = settings_text({name: upstream[name] for name in stage.after if name in upstream})
    renders = {f"renders:{path.name}": path for path in stage.renders}
    return {"inputs": files_fingerprint({**stage.inputs(ctx), **renders}, after),
            "settings": hashlib.sha256(settings_text(settings_of(ctx, stage.settings)).encode()).hexdigest(),
            "code": code_fingerprint(stage.code)}


def output_problem(ctx: Context, state: StageState) -> str | None:
    """The first output of a done stage that is no longer as it was written (its hash), or None."""
    for role, recorded in sorted(state.outputs.items()):
        path = ctx.folder.out / recorded
        expected = state.hashes.get(role)
        actual = content_hash(path)
        if expected is None:
            return f"{path}: recorded without its hash (by an older version of the builder)"
        if actual != expected:
            return f"{path} {'is missing' if actual == '<missing>' else 'was changed'} since the stage wrote it"
    return None


def each_stage(ctx: Context, stages: list[Stage], upstream: dict[str, str] | None = None,
               force: bool = False) -> Iterator[StageCheck]:
    """The stages with their fingerprints, states and problems, lazily: a fingerprint is computed once the stages
    before have run, so a flow records what the stage read. ``upstream``: the earlier stages' fingerprints, for a
    walk from the middle. ``force``: no state counts, and outputs are not checked (nor a release hashed)."""
    upstream = dict(upstream or {})
    for stage in stages:
        parts = stage_parts(ctx, stage, upstream)
        check = StageCheck(stage, parts, None if force else ctx.state(stage.name), None)
        upstream[stage.name] = ctx.fingerprints[stage.name] = check.fingerprint
        if check.state is not None and check.state.status == DONE:
            check = replace(check, problem=output_problem(ctx, check.state)
                            or (stage.made(ctx, check.state.fingerprint) if stage.made else None))
        yield check


def done_state(ctx: Context, check: StageCheck, counts: dict[str, object], outputs: dict[str, Path],
               summary: str) -> StageState:
    """A finished stage's state: fingerprint, counts, each output and its hash; an output relative to the build folder
    when in it (a copied build folder reads its own files), else absolute (an input the pipeline names)."""
    out = ctx.folder.out.resolve()
    resolved = {role: Path(path).resolve() for role, path in outputs.items()}
    recorded = {role: path.relative_to(out).as_posix() if path.is_relative_to(out) else str(path)
                for role, path in resolved.items()}
    hashes = {role: content_hash(Path(path)) for role, path in outputs.items()}
    return StageState(check.stage.name, DONE, check.fingerprint, summary, counts, recorded, hashes=hashes,
                      parts=check.parts)


@dataclass
class Plan:
    """One command's run: the context, its stages and their checks as found before the flow run."""

    ctx: Context
    stages: list[Stage]
    checks: list[StageCheck]  # with ``force``, none is current
    force: bool = False  # run every stage, current or not

    @classmethod
    def of(cls, ctx: Context, stages: list[Stage], force: bool = False) -> Plan:
        check_order(stages)
        return cls(ctx, stages, list(each_stage(ctx, stages, force=force)), force)

    @property
    def current(self) -> bool:
        """Every stage done with unchanged inputs and intact outputs: nothing to do, and no Prefect to start."""
        return all(check.current for check in self.checks)

    def prepare(self) -> None:
        """Before any flow run, every stage about to run checks the inputs it has: bad input stops before Prefect."""
        ctx = self.ctx
        ctx.pending = {check.stage.name for check in self.checks if not check.current}
        for check in self.checks:
            if check.current or not check.stage.prepares:
                continue
            try:
                check.stage.prepare(ctx)
            except UserError as error:  # recorded as the stage's failure (in a pipeline that has run before: a
                if ctx.one_off is None and ctx.states.exists():  # first run with bad input writes nothing at all)
                    write_state(ctx.states, StageState(check.stage.name, FAILED, check.fingerprint, error.render()))
                raise


def templates_plan(templates: Path, out: Path, profile: Profile, name: str | None = None,
                   corrections: Path | None = None, seed: int | None = None, test_split: str = PROFILE,
                   survey: SurveyInputs | None = None, force: bool = False) -> Plan:
    """``kobbq build --templates``'s plan: a pipeline made from its arguments, its state and work folders its own
    (named after the template file)."""
    if not templates.exists():
        raise UserError("does not exist", templates)

    def given(path: Path | None) -> str:
        return str(path.resolve()) if path is not None else ""

    survey_section = SurveySection() if survey is None else SurveySection(
        results=given(survey.results), reading=given(survey.reading), overrides=given(survey.overrides),
        questions=given(survey.questions), allow_unmatched=survey.allow_unmatched)
    config = PipelineConfig(profile=profile.argument, name=name, seed=seed, test_split=test_split,
                            templates=TemplatesSection(file=given(templates), corrections=given(corrections)),
                            survey=survey_section)
    pipeline = Pipeline(Path.cwd() / "kobbq-build", config, pipeline_key("templates", given(templates)))
    return Plan.of(context(pipeline, out, profile), stages_for(pipeline), force)


def one_off_plan(stage: Stage, config: PipelineConfig, profile: Profile, out: Path,
                 given: dict[tuple[str, str], Path] | None = None, offline: bool = False) -> Plan:
    """A one-off command's plan (``kobbq translate``): one stage, its settings from the command's arguments,
    everything it writes in ``out``, nothing recorded or skipped."""
    pipeline = Pipeline(Path.cwd() / "kobbq", config, pipeline_key("one-off", str(Path(out).resolve())))
    ctx = Context(pipeline, profile, ReleaseFolder(Path(out), profile.release.name), one_off=Path(out),
                  given=given or {}, offline=offline)
    return Plan.of(ctx, [stage])


def pipeline_plan(path: Path, out: Path, force: bool = False) -> Plan:
    """``kobbq build --pipeline FILE``'s plan: start inputs checked, stage states readable (``force``: removed)."""
    pipeline = load_pipeline(path)
    check_start_inputs(pipeline)  # a mistyped path is an error now, not a stage waiting after Prefect's start-up
    ctx = context(pipeline, out)
    for removed in check_states(ctx.states, STAGES, rewrite=force):
        console.step(f"{removed}: unreadable, removed (--force); its stage runs again")
    return Plan.of(ctx, stages_for(pipeline), force)
