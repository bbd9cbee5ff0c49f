"""The runner in Prefect around the plain runner (``tasks.pipeline.run``): one flow run per command, named ``<release>
<command>``, with its progress lines as logs, and one task run per stage that publishes its artifacts and ends as the
stage did (Failed, "Waiting for ...", "Unchanged" or Completed). A deployment run (``build``) passes files instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State

from core import console, interrupt
from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import DONE, FAILED, WAITING
from core.profile import DEFAULT_PROFILE, load_profile
from core.stage_contract import Context, Waiting
from flows.artifacts import publish_stage
from tasks.pipeline.plan import Plan, templates_plan
from tasks.pipeline.run import PipelineResult, StageRun, run_plan
from tasks.release.test_split import PROFILE
from tasks.translation.deepl_client import KEY_VARIABLE

FLOW = "kobbq-build"


def ended(status: str, message: str, waiting: Waiting | None = None, unchanged: bool = False) -> State:
    """The state a stage's task run, or the flow run, ends in."""
    if status == FAILED:
        return Failed(message=" ".join(line.strip() for line in message.splitlines()) or "failed")  # one line
    if status == WAITING:
        return Completed(name=f"Waiting for {waiting.what if waiting else 'people'}", message=message)
    return Completed(name="Unchanged" if unchanged else "Completed", message=message)


def in_task(ctx: Context, name: str, work: Callable[[], StageRun]) -> StageRun:
    """One stage's run as a task run named after it, which publishes what the stage returned and ends as it did."""
    runs: list[StageRun] = []

    def stage() -> State:
        run = work()
        publish_stage(ctx, run)
        runs.append(run)
        return ended(run.state.status, run.state.message, run.waiting, run.check.current)

    state = task(stage, name="stage", task_run_name=name, cache_policy=NO_CACHE)(return_state=True)
    if not runs:
        state.result()  # what the stage or its publishing raised (a bug, an interrupt, the API gone), raised here
    return runs[0]


def in_flow(plan: Plan) -> tuple[PipelineResult, State]:
    """The plan's stages, each a task run, with the progress lines in the flow run's logs; its final state."""
    with console.copied_to(get_run_logger().info):
        interrupt.take_over(plan.ctx.folder.out)
        interrupt.checkpoint("start-up")
        console.step("flow started (Prefect API ready)")
        deepl_key_from_block(plan)
        result = run_plan(plan, partial(in_task, plan.ctx))
    status = DONE if result.finished else FAILED if result.failed else WAITING
    message = result.message if result.finished else f"{result.stage}: {result.message}"
    return result, ended(status, message, result.waiting)


def run_command(plan: Plan, command: str, arguments: dict[str, object]) -> PipelineResult:
    """A command's plan (made and prepared by the command) in one flow run."""
    results: list[PipelineResult] = []

    def kobbq_build(command: str, arguments: dict[str, object]) -> State:
        result, state = in_flow(plan)
        results.append(result)
        return state

    logging.raiseExceptions = False  # a log record the API no longer takes is not printed: the command says why
    run = flow(kobbq_build, name=FLOW, flow_run_name=f"{plan.ctx.name} {command}".replace("{", "{{").replace("}", "}}"),
               log_prints=False, validate_parameters=False)
    state = run(command, arguments, return_state=True)
    if not results:
        state.result()  # what the run raised, raised here as it was
    return results[0]


@flow(name=FLOW, log_prints=False)
def build(templates: Path, out: Path = DEFAULT_BUILD_DIR, profile: str | None = None, name: str | None = None,
          corrections: Path | None = None, seed: int | None = None, test_split: str = PROFILE,
          force: bool = False) -> State:
    """A deployment run: the release of one template file, as ``kobbq build --templates`` without a survey builds
    it; the run's result is the ``PipelineResult``."""
    plan = templates_plan(Path(templates), Path(out), load_profile(profile or DEFAULT_PROFILE), name,
                          Path(corrections) if corrections else None, seed, test_split, force=force)
    plan.prepare()
    result, state = in_flow(plan)
    state.data = result
    return state


def deepl_key_from_block(plan: Plan) -> None:
    """A stage that may pay DeepL and no ``DEEPL_AUTH_KEY``: the key of the profile's Prefect Secret block, when
    there is one, for this process only (never printed or written); without either the stage replays the cache."""
    if plan.ctx.offline or os.environ.get(KEY_VARIABLE) or "pretranslate" not in {s.name for s in plan.stages}:
        return
    from prefect.blocks.system import Secret

    with suppress(Exception):  # no such block: the stage says what it waits for
        os.environ[KEY_VARIABLE] = str(Secret.load(plan.ctx.profile.translation.secret_block).get())
