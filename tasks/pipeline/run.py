"""The runner: a command's plan (``tasks.pipeline.plan.Plan``) run stage by stage in plain Python. ``execute`` answers
an all-current plan at once (nothing written: a read-only release can be checked), has the stages about to run check
their inputs, readies the build folder, then hands the plan to ``launch``: the Prefect flow run (``flows.pipeline``)
or ``run_plan``. Nothing here knows of Prefect.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from core import console, interrupt
from core.atomic import check_writable, write_with
from core.decisions import write_decisions_csv
from core.errors import UserError
from core.pipeline_file import DONE, FAILED, WAITING, PipelineConfig, StageState, write_state
from core.profile import Profile
from core.release_folder import ReleaseFolder, check_replaceable
from core.stage_contract import Context, StageOutput, Waiting
from tasks.pipeline.plan import Plan, StageCheck, done_state, each_stage, one_off_plan
from tasks.pipeline.stages import RELEASE, STAGE_OF
from tasks.release.check_child import warm_up
from tasks.release.publish import build_lock, recover


@dataclass(frozen=True)
class StageRun:
    """What one stage's run came to: the state it recorded, what it returned (done) or what it waits for."""

    check: StageCheck
    state: StageState
    output: StageOutput | None = None
    waiting: Waiting | None = None


# Called around each stage's run with the stage's name and its work; returns what the work returned.
Observer = Callable[[str, Callable[[], StageRun]], StageRun]


def plainly(name: str, work: Callable[[], StageRun]) -> StageRun:
    """The observer of a run without Prefect: the stage's work as it is."""
    return work()


@dataclass(frozen=True)
class PipelineResult:
    finished: bool
    stage: str | None  # the stage that waits (or failed); None when every stage is done
    message: str
    release_dir: Path | None
    samples: int = 0
    test_samples: int = 0
    failed: bool = False
    outputs: dict[str, StageOutput] = field(default_factory=dict)  # what each stage that ran returned
    waiting: Waiting | None = None  # what the stage that stopped the run waits for


def run_stage(ctx: Context, check: StageCheck) -> StageRun:
    """Run one stage unless it is current, and record its state; a user error is its failure, returned, not raised."""
    stage = check.stage
    if check.current:
        assert check.state is not None
        console.step(f"{stage.name}: unchanged, skipped ({check.state.message})")
        return StageRun(check, check.state)
    try:
        output = stage.run(ctx)
    except Waiting as waiting:
        state = record(ctx, StageState(stage.name, WAITING, check.fingerprint, str(waiting)))
        console.step(f"{stage.name}: WAITING for {waiting.what}")  # what for, and what to do: said once, at the end
        return StageRun(check, state, waiting=waiting)
    except UserError as error:
        state = record(ctx, StageState(stage.name, FAILED, check.fingerprint, error.render()))
        console.step(f"{stage.name}: FAILED")
        return StageRun(check, state)
    ctx.memo[("decisions", stage.name)] = output.decisions
    ctx.memo[("output", stage.name)] = output
    ctx.pending.discard(stage.name)
    write_with(ctx.decisions_file(stage.name, stage.log), lambda path: write_decisions_csv(output.decisions, path))
    state = record(ctx, done_state(ctx, check, output.counts, output.outputs, output.summary))
    console.step(f"{stage.name}: done: {output.summary}")
    return StageRun(check, state, output)


def record(ctx: Context, state: StageState) -> StageState:
    """A stage's state, kept with the pipeline (a one-off command keeps none: ``ctx.memo`` holds what it made)."""
    if ctx.one_off is None:
        write_state(ctx.states, state)
    ctx.memo[("state", state.stage)] = state
    return state


def run_plan(plan: Plan, observe: Observer = plainly) -> PipelineResult:
    """The plan's stages in order until one waits or fails, the later ones checked again after each (their inputs
    may be what it wrote)."""
    ctx, checks, index = plan.ctx, plan.checks, 0
    while index < len(checks):
        check = checks[index]
        run = observe(check.stage.name, lambda: run_stage(ctx, check))
        if run.state.status != DONE:
            return PipelineResult(False, check.stage.name, run.state.message, None, failed=run.state.status == FAILED,
                                  waiting=run.waiting)
        if not check.current:
            later = each_stage(ctx, plan.stages[index + 1:], ctx.fingerprints, plan.force)
            checks = checks[:index + 1] + list(later)
        index += 1
    state = ctx.memo.get(("state", plan.stages[-1].name)) or ctx.state(plan.stages[-1].name)
    counts = state.counts if state else {}
    outputs = {stage.name: ctx.memo[("output", stage.name)] for stage in plan.stages
               if ("output", stage.name) in ctx.memo}
    return PipelineResult(True, None, state.message if state else "", ctx.folder.path,
                          int(counts.get("samples", 0)), int(counts.get("test_samples", 0)), outputs=outputs)


Launch = Callable[[Plan], PipelineResult]


def tidy(folder: ReleaseFolder) -> None:
    """End what a killed build left running and clean up its folders; nothing written when there is nothing to do,
    so a release on a read-only mount can be found up to date."""
    for ended in interrupt.reap_orphans(folder.out):
        console.step(f"ended {ended}, left running by a build that was killed")
    recover(folder.path)


@contextmanager
def build_folder(folder: ReleaseFolder) -> Iterator[None]:
    """The build folder writable and tidy, and the release's lock held until the block ends."""
    check_writable(folder.out)
    tidy(folder)
    with build_lock(folder.path):
        yield


def running_build(target: Path) -> str | None:
    """The process id of the build that holds the release's lock (``tasks.release.publish.build_lock``: the file
    ``<out>/.<name>.lock`` with its holder's id), "?" when it wrote none; None when no build holds it. Reads only."""
    try:
        with (target.parent / f".{target.name}.lock").open("r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return handle.read().strip() or "?"
    except OSError:  # no lock file: no build has run here
        return None
    return None


def execute(plan: Plan, launch: Launch = run_plan) -> PipelineResult | None:
    """Run ``plan`` through ``launch``; None when every stage is current (nothing ran, nothing started)."""
    if plan.ctx.one_off is not None:
        check_writable(plan.ctx.one_off)
        plan.prepare()
        return launch(plan)
    check_replaceable(plan.ctx.folder.path, plan.ctx.profile.name)  # a user's folder, another release: kept
    if plan.current:
        tidy(plan.ctx.folder)  # a killed build's leftovers go, even now
        return None
    if RELEASE in {check.stage.name for check in plan.checks if not check.current}:
        warm_up()  # the release checks' child imports its library (~4 s) while the stages read their inputs
    plan.prepare()  # bad input stops here, before anything is written
    with build_folder(plan.ctx.folder):
        return launch(plan)


def run_alone(name: str, config: PipelineConfig, profile: Profile, out: Path, launch: Launch = run_plan,
              given: dict | None = None, offline: bool = False) -> StageOutput:
    """A one-off command: the stage ``name`` alone on the command's files, everything written to ``out``; what it
    returned. A stage that fails or waits is one error paragraph."""
    stage = STAGE_OF[name]
    result = execute(one_off_plan(stage, config, profile, out, given, offline), launch)
    assert result is not None, "a one-off plan is never current"
    if result.stage == stage.name:
        raise UserError(f"{stage.name}: {result.message}")
    return result.outputs[stage.name]
