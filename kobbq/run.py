"""How a command runs its plan: the one place a command starts Prefect.

The command has made and checked its plan (``tasks.build.pipeline.Plan``) before this is called. Here the build
folder is made ready (a killed build's leftovers ended, the release locked), a plan whose stages are all current
is answered without Prefect, every stage about to run reads and checks its inputs (a bad file stops in one line
before Prefect starts), and only then is the flow run started: against the Prefect server the environment names
(``PREFECT_API_URL``), or, said in one line, a temporary one started for this command.
"""

from __future__ import annotations

import os
from pathlib import Path

from core import console
from core.atomic import check_writable
from core.errors import UserError
from core.release_folder import check_replaceable

FALLBACK = ("Prefect: no server configured (PREFECT_API_URL), so this command starts a temporary one (5-20 s); "
            "`prefect server start --background` and `prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api` "
            "start one for every command")


def server_url() -> str:
    """The Prefect API this process will use ("" for none: a temporary one), from the environment or the active
    Prefect profile."""
    url = os.environ.get("PREFECT_API_URL", "")
    if url:
        return url
    from prefect.settings import get_current_settings  # Prefect, imported only when a flow is about to run

    return str(get_current_settings().api.url or "")


def execute(plan, label: str = "kobbq build"):  # (tasks.build.pipeline.Plan, str) -> PipelineResult | None
    """Run ``plan`` in one flow run; None when every stage is current (nothing ran, Prefect not started)."""
    from tasks.build.folder import build_folder  # with the plan's own imports: the command has made the plan
    if plan.ctx.one_off is not None:
        check_writable(plan.ctx.one_off)
        plan.prepare()
        return start(plan, label)
    check_replaceable(plan.ctx.folder.path)  # a folder this project did not write is never replaced
    if plan.current:
        with build_folder(plan.ctx.folder, lock=False):  # a killed build's leftovers go, even now
            return None
    plan.prepare()  # bad input stops here, before anything is written
    with build_folder(plan.ctx.folder):
        return start(plan, label)


def start(plan, label: str):  # (tasks.build.pipeline.Plan, str) -> flows.pipeline.PipelineResult
    check_prefect_home()
    from prefect.utilities.annotations import opaque

    from flows.pipeline import Computed, build  # Prefect, imported once kobbq.cli has set its settings

    if not server_url():
        console.step(FALLBACK)
    return build(prepared=opaque(Computed(plan)), command=label)


def check_prefect_home() -> None:
    """Prefect writes its database and settings in its home: one that cannot be written stops here in one line,
    not after Prefect's start-up times out."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        check_writable(home)
    except UserError:
        raise UserError("Prefect's home cannot be written (Prefect keeps its database and settings there); set "
                        "PREFECT_HOME to a folder that can be, or PREFECT_API_URL to a running server", home) from None


def run_alone(stage, config, profile, out: Path, label: str, given: dict | None = None, offline: bool = False):
    """A one-off command: ``stage`` alone on the command's files (``config``: a pipeline file's settings made from
    its arguments), everything written to ``out``; what the stage returned. A stage that fails or waits is one
    error paragraph."""
    from tasks.build.pipeline import one_off_plan  # the stages and their libraries: not for --help

    result = execute(one_off_plan(stage, config, profile, out, given, offline), label)
    if result.stage == stage.name:
        raise UserError(f"{stage.name}: {result.message}")
    return result.outputs[stage.name]
