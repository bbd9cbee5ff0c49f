"""One flow from English BBQ templates to the release, with people in the loop.

The stages (``tasks.build.pipeline``: labels -> pretranslate -> postedit -> templates -> survey-export ->
survey) run in order, each as one Prefect task around its ``run`` function; then the release is built
from what they recorded (``flows.build.release_steps``, in this flow). A stage whose fingerprint
(``core.fingerprint``) is unchanged is skipped; the first stage that waits for people (the annotators'
consensus, the translator's workbooks, the survey results, or a DeepL key for segments not yet paid for)
stops the run, saying what it waits for and what to send out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from core import console, interrupt
from core.atomic import write_with
from core.decisions import write_decisions_csv
from core.errors import UserError
from core.pipeline_file import DONE, FAILED, WAITING, StageState, read_state, write_state
from flows.artifacts import publish_stage
from flows.build import release_steps
from tasks.build.pipeline import RELEASE, StageCheck, check_test_split, each_stage, release_fingerprint, release_request
from tasks.stage_contract import Context, Waiting


@task(name="pipeline-stage", cache_policy=NO_CACHE, task_run_name="{check.stage.name}")
def run_stage(ctx: Context, check: StageCheck) -> str:
    """Run one stage unless it is current; its status (done, waiting, failed).

    A user error (a bad input file) is recorded as the stage's failure and returned, not raised:
    the command prints it in one paragraph, without a Prefect traceback.
    """
    stage, current, state = check.stage, check.fingerprint, check.state
    if check.current:
        console.step(f"{stage.name}: unchanged, skipped ({state.message})")
        publish_stage(ctx.name, stage.name, replace(state, status=f"{state.status} (unchanged, skipped)"))
        return DONE
    try:
        output = stage.run(ctx)
    except Waiting as waiting:
        write_state(ctx.states, state := StageState(stage.name, WAITING, current, str(waiting)))
        console.step(f"{stage.name}: WAITING: {waiting}")
        publish_stage(ctx.name, stage.name, state, waiting=waiting)
        return WAITING
    except UserError as error:
        write_state(ctx.states, state := StageState(stage.name, FAILED, current, error.render()))
        console.step(f"{stage.name}: FAILED")
        publish_stage(ctx.name, stage.name, state)
        return FAILED
    decisions = output.decisions
    write_with(ctx.decisions_file(stage.name), lambda path: write_decisions_csv(decisions, path))
    outputs = {role: str(path) for role, path in output.outputs.items()}
    write_state(ctx.states, state := StageState(stage.name, DONE, current, output.summary, output.counts, outputs))
    console.step(f"{stage.name}: done: {output.summary}")
    publish_stage(ctx.name, stage.name, state, output)
    return DONE


@dataclass(frozen=True)
class PipelineResult:
    finished: bool
    waiting_stage: str | None  # the stage that waits (or failed)
    message: str
    release_dir: Path | None
    samples: int = 0
    test_samples: int = 0
    failed: bool = False


@flow(name="kobbq-pipeline", log_prints=False)
def run_pipeline(ctx: Context, force: bool = False) -> PipelineResult:
    """Every stage of ``ctx``'s pipeline (``tasks.build.pipeline.context``), then its release."""
    interrupt.take_over(ctx.folder.out)
    console.step("pipeline flow started (Prefect API ready)")
    for check in each_stage(ctx):
        status = run_stage(ctx, check)
        if status != DONE:
            state = read_state(ctx.states, check.stage.name)
            return PipelineResult(False, check.stage.name, state.message if state else "", None,
                                  failed=status == FAILED)
    request = release_request(ctx, force)
    try:
        check_test_split(request)
    except UserError as error:  # recorded as the release stage's failure, printed in one paragraph
        write_state(ctx.states, StageState(RELEASE, FAILED, release_fingerprint(ctx), error.render()))
        return PipelineResult(False, RELEASE, error.render(), None, failed=True)
    result = release_steps(request)
    summary = f"{result.samples:,} samples, {result.test_samples:,} in the test split"
    write_state(ctx.states, StageState(RELEASE, DONE, release_fingerprint(ctx), summary,
                                       {"samples": result.samples, "test_samples": result.test_samples},
                                       {"release": str(result.release_dir)}))
    return PipelineResult(True, None, summary, result.release_dir, result.samples, result.test_samples)
