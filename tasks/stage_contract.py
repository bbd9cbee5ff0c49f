"""The contract every pipeline stage keeps, and the context the runner hands it.

A stage (``Stage``) declares its inputs as files by role (``inputs(ctx)``) and does its work in
one function (``run(ctx)``) that returns a ``StageOutput``: counts, output files by role, the
decisions it took and a one-line summary. A stage that cannot run until people deliver
something raises ``Waiting`` with what it waits for and what to send out.

The runner (``flows/pipeline.py``), not the stage, wires stages together: it fingerprints the
inputs, skips a stage that is current, records each stage's state and outputs
(``core.pipeline_file``), and hands later stages the outputs of earlier ones by role
(``Context.output``), never by a literal path into another stage's folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.decisions import Decision
from core.pipeline_file import Pipeline, read_state
from core.profile import Profile
from core.release_folder import ReleaseFolder


DECISIONS_FILE = "decisions.csv"


class Waiting(Exception):
    """A stage cannot run until people deliver something: what it waits for, and what to send out so that
    they can (the message says both; the Prefect artifacts of the run show them apart)."""

    def __init__(self, waits_for: str, send_out: str = "") -> None:
        super().__init__(f"{waits_for}. {send_out}")
        self.waits_for = waits_for
        self.send_out = send_out


@dataclass(frozen=True)
class StageOutput:
    counts: dict[str, object]
    outputs: dict[str, Path]  # role -> file; roles "report:<name>" are copied into the release
    decisions: list[Decision]
    summary: str
    tables: dict[str, list[dict[str, object]]] = field(default_factory=dict)  # name -> rows, shown with the run


@dataclass
class Context:
    """What a stage may look at: the pipeline file, the profile, and earlier stages' recorded outputs."""

    pipeline: Pipeline
    profile: Profile
    folder: ReleaseFolder
    upstream: dict[str, Path] = field(default_factory=dict)  # stage -> its decisions file

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def work(self) -> Path:
        return self.folder.work

    @property
    def states(self) -> Path:
        return self.folder.states

    def stage_dir(self, stage: str) -> Path:
        folder = self.work / stage
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def file(self, value: str) -> Path | None:
        return self.pipeline.file(value)

    def decisions_file(self, stage: str) -> Path:
        """Where the runner keeps a stage's decisions (the release merges them into its log)."""
        return self.work / stage / DECISIONS_FILE

    def output(self, stage: str, role: str) -> Path | None:
        """The file an earlier stage recorded under ``role``; None before it has run (a fingerprint then
        records the input as missing)."""
        state = read_state(self.states, stage)
        recorded = state.outputs.get(role) if state else None
        return Path(recorded) if recorded else None

    @property
    def corrections(self) -> Path | None:
        return self.file(self.pipeline.config.templates.corrections)


def require(path: Path | None, what: str, hint: str) -> Path:
    """An input a stage cannot do without: waits for people when it is not configured or not there yet."""
    if path is None:
        raise Waiting(f"{what}: not configured in the pipeline file", hint)
    if not path.exists():
        raise Waiting(f"{what}: {path} does not exist yet", hint)
    return path


@dataclass(frozen=True)
class Stage:
    name: str
    inputs: Callable[[Context], dict[str, Path | None]]
    run: Callable[[Context], StageOutput]
