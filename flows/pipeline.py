"""The one runner: every command that builds something runs its stages here, one Prefect flow run per command,
each stage one task.

The command makes the plan (``tasks.build.pipeline.Plan``: a pipeline file, or a pipeline made from its
arguments, checked and prepared before Prefect starts) and hands it to ``build`` as it is; a deployment run
(``prefect.yaml``'s ``kobbq-build``) passes files instead, and the flow makes the same plan from them. A stage
whose fingerprint is unchanged and whose outputs are intact is skipped; the first stage that waits for people
(the annotators' consensus, the translator's workbooks, the survey results, or a DeepL key for segments not yet
paid for) stops the run, saying what it waits for and what to send out. Every stage's run publishes its
artifacts (``flows.artifacts``) from what it returned, never from files read back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque

from core import console, interrupt
from core.atomic import write_with
from core.decisions import write_decisions_csv
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import DONE, FAILED, WAITING, StageState, write_state
from core.profile import DEFAULT_PROFILE, load_profile
from flows.artifacts import publish_stage
from tasks.build.pipeline import Plan, StageCheck, done_state, each_stage, templates_plan
from tasks.release.test_split import PROFILE
from tasks.stage_contract import Context, StageOutput, Waiting
from tasks.translation.deepl_client import KEY_VARIABLE
from tasks.translation.pretranslate_stage import NAME as PRETRANSLATE

T = TypeVar("T")


class Computed(Generic[T]):
    """A value the command computed before Prefect started, handed to the flow as it is. Prefect stores a flow
    run's parameters when it can serialise them; it cannot serialise this holder (it has no fields to read), so
    the run records ``<Computed>`` instead of encoding every template and decision."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


@task(name="stage", cache_policy=NO_CACHE, task_run_name="{name}")
def run_stage(ctx: Context, check: StageCheck, name: str) -> str:
    """Run one stage unless it is current; its status (done, waiting, failed).

    A user error (a bad input file) is recorded as the stage's failure and returned, not raised: the command
    prints it in one paragraph, without a Prefect traceback."""
    stage = check.stage
    if check.current:
        assert check.state is not None
        console.step(f"{stage.name}: unchanged, skipped ({check.state.message})")
        publish_stage(ctx.name, stage.name, StageState(**{**vars(check.state),
                                                           "status": f"{DONE} (unchanged, skipped)"}))
        return DONE
    try:
        output = stage.run(ctx)
    except Waiting as waiting:
        record(ctx, state := StageState(stage.name, WAITING, check.fingerprint, str(waiting)))
        console.step(f"{stage.name}: WAITING: {waiting}")
        publish_stage(ctx.name, stage.name, state, waiting=waiting)
        return WAITING
    except UserError as error:
        record(ctx, state := StageState(stage.name, FAILED, check.fingerprint, error.render()))
        console.step(f"{stage.name}: FAILED")
        publish_stage(ctx.name, stage.name, state)
        return FAILED
    ctx.memo[("decisions", stage.name)] = output.decisions
    ctx.memo[("output", stage.name)] = output
    ctx.pending.discard(stage.name)
    write_with(ctx.decisions_file(stage.name, stage.log), lambda path: write_decisions_csv(output.decisions, path))
    record(ctx, state := done_state(ctx, check, output.counts, output.outputs, output.summary))
    console.step(f"{stage.name}: done: {output.summary}")
    publish_stage(ctx.name, stage.name, state, output)
    return DONE


def record(ctx: Context, state: StageState) -> None:
    """A stage's state, kept with the pipeline (a one-off command keeps none: ``ctx.memo`` holds what it made)."""
    if ctx.one_off is None:
        write_state(ctx.states, state)
    ctx.memo[("state", state.stage)] = state


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


def run_plan(plan: Plan) -> PipelineResult:
    """Every stage of the plan in order, until one waits or fails. After a stage runs, the stages after it are
    checked again (their inputs may be what it has just written)."""
    ctx, checks, index = plan.ctx, plan.checks, 0
    while index < len(checks):
        check = checks[index]
        # Opaque: Prefect would otherwise walk the context's contents (every template, the expansion) for futures.
        status = run_stage(opaque(ctx), opaque(check), check.stage.name)
        if status != DONE:
            state = ctx.memo.get(("state", check.stage.name))
            return PipelineResult(False, check.stage.name, state.message if state else "", None,
                                  failed=status == FAILED)
        if not check.current:
            later = each_stage(ctx, plan.stages[index + 1:], ctx.fingerprints, plan.force)
            checks = checks[:index + 1] + list(later)
        index += 1
    state = ctx.memo.get(("state", plan.stages[-1].name)) or ctx.state(plan.stages[-1].name)
    counts = state.counts if state else {}
    outputs = {stage.name: ctx.memo[("output", stage.name)] for stage in plan.stages if ("output", stage.name) in ctx.memo}
    return PipelineResult(True, None, state.message if state else "", ctx.folder.path,
                          int(counts.get("samples", 0)), int(counts.get("test_samples", 0)), outputs=outputs)


@flow(name="kobbq-build", flow_run_name="{command}", log_prints=False)
def build(templates: Path | None = None, out: Path = DEFAULT_BUILD_DIR, profile: str | None = None,
          name: str | None = None, corrections: Path | None = None, seed: int | None = None,
          test_split: str = PROFILE, force: bool = False, prepared: Computed[Plan] | None = None,
          command: str = "kobbq build") -> PipelineResult:
    """A command's stages (``prepared``: the plan the command made and checked), or, for a deployment run, the
    release of one template file, as ``kobbq build --templates`` without a survey builds it. ``command`` names
    the run."""
    if prepared is None and templates is None:
        raise UserError("a deployment run builds from files: give its templates parameter")
    plan = prepared.value if prepared is not None else templates_plan(
        Path(templates), Path(out), load_profile(profile or DEFAULT_PROFILE), name,  # type: ignore[arg-type]
        Path(corrections) if corrections else None, seed, test_split, force=force)
    interrupt.take_over(plan.ctx.folder.out)
    interrupt.checkpoint("start-up")
    console.step("flow started (Prefect API ready)")
    if prepared is None:
        plan.prepare()
    deepl_key_from_block(plan)
    return run_plan(plan)


def deepl_key_from_block(plan: Plan) -> None:
    """A stage that may pay DeepL and no ``DEEPL_AUTH_KEY``: the key of the profile's Prefect Secret block, when
    there is one, for this process only (never printed or written); without either the stage replays the cache."""
    if plan.ctx.offline or os.environ.get(KEY_VARIABLE) or PRETRANSLATE not in {s.name for s in plan.stages}:
        return
    from prefect.blocks.system import Secret

    try:
        os.environ[KEY_VARIABLE] = str(Secret.load(plan.ctx.profile.translation.secret_block).get())
    except Exception:  # no such block: the stage says what it waits for
        pass
