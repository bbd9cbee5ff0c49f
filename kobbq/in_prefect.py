"""A command's plan run in Prefect: the one place a command starts it, after the runner has found work to do and checked
the inputs. The flow run goes to the server ``PREFECT_API_URL`` names (checked first), else to the background server of
the working session (``flows.server``); it is named after the release and the command as typed."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:  # the runner imports every stage: not for --help
    from core.pipeline_file import PipelineConfig
    from core.profile import Profile
    from core.stage_contract import StageOutput
    from tasks.pipeline.plan import Plan
    from tasks.pipeline.run import Launch, PipelineResult

NOT_ARGUMENTS = ("handler", "words", "debug")


def launcher(args: argparse.Namespace) -> Launch:
    """How the command ``args`` runs a plan: in one Prefect flow run."""
    return lambda plan: in_prefect(plan, args)


def run_alone(stage: str, config: PipelineConfig, profile: Profile, out: Path, args: argparse.Namespace,
              given: dict | None = None, offline: bool = False) -> StageOutput:
    """A one-off command's stage, by its name (``tasks.pipeline.run.run_alone``), in one flow run."""
    from tasks.pipeline.run import run_alone as run  # the runner and every stage: not for --help

    return run(stage, config, profile, out, launcher(args), given, offline)


def decisions_written(stage: str, out: Path) -> Path:
    """The decisions file the one-off command of ``stage`` wrote into ``out``, as its contract names it."""
    from core.stage_contract import one_off_decisions
    from tasks.pipeline.stages import STAGE_OF  # the stages' contracts: not for --help

    return one_off_decisions(out, stage, STAGE_OF[stage].log)


def in_prefect(plan: Plan, args: argparse.Namespace) -> PipelineResult:
    """Prefect is imported (once the command has work for it) while the release checks' child imports its own
    library; a library that cannot be imported is then one line, before a server is asked for. Prefect's home is
    checked first: an unwritable one is one line, not Prefect's warning about it and then the line."""
    from flows.server import check_prefect_home, connect
    from tasks.release.check_child import ready

    check_prefect_home()
    from flows.pipeline import run_command

    ready()
    with connect():
        return run_command(plan, shlex.join(args.words), arguments(args))


def arguments(args: argparse.Namespace) -> dict[str, object]:
    """The command's arguments as the flow run's parameters (paths as given)."""
    return {name: str(value) if isinstance(value, Path) else value for name, value in sorted(vars(args).items())
            if name not in NOT_ARGUMENTS}
