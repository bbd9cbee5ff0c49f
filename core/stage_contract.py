"""The contract every pipeline stage keeps (``Stage``: what it reads and the module that does its work), and the
``Context`` the runner hands it. A stage's fingerprint covers exactly what it declares and its own code, so one changed
survey cut-off re-runs the survey stage and those after it, nothing before. The runner (``tasks.pipeline``), not the
stage, wires stages together by output role (``Context.output``), never by a path into another stage's folder."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from core.decisions import Decision, read_decisions
from core.pipeline_file import Pipeline, StageState, read_state
from core.profile import Profile
from core.release_folder import DECISIONS, ReleaseFolder

T = TypeVar("T")


class Waiting(Exception):
    """A stage cannot run until people deliver something: what it waits for, and what to send out so that they can."""

    def __init__(self, waits_for: str, send_out: str = "", what: str = "") -> None:
        super().__init__(f"{waits_for}. {send_out}")
        self.waits_for = waits_for
        self.send_out = send_out
        self.what = what or waits_for.split(": ")[0]  # what it waits for, in a few words (the run's state names it)


@dataclass(frozen=True)
class StageOutput:
    counts: dict[str, object]
    outputs: dict[str, Path]  # role -> file; roles "report:<name>" are copied into the release
    decisions: list[Decision]
    summary: str
    tables: dict[str, list[dict[str, object]]] = field(default_factory=dict)  # name -> rows, shown with the run
    links: dict[str, Path] = field(default_factory=dict)  # name -> a file or folder to show with the run
    text: str = ""  # a longer summary in markdown, shown with the run (the release's)


@dataclass
class Context:
    """What a stage may look at: the pipeline, the profile, and earlier stages' recorded outputs."""

    pipeline: Pipeline
    profile: Profile
    folder: ReleaseFolder
    # Stages this run has still to run: a stage's ``prepare`` does not read an output one of them is about to rewrite.
    pending: set[str] = field(default_factory=set)
    memo: dict[object, object] = field(default_factory=dict)  # read or computed once (``once``), shared by all stages
    fingerprints: dict[str, str] = field(default_factory=dict)  # stage -> its fingerprint in the current walk
    # A one-off command's run (``kobbq translate``, ``kobbq survey ingest``): everything its stage writes goes to
    # this folder, and nothing is recorded or skipped.
    one_off: Path | None = None
    # Outputs of stages that are not in this run, as the command was given them: (stage, role) -> file.
    given: dict[tuple[str, str], Path] = field(default_factory=dict)
    offline: bool = False  # no paid call: the translation cache replayed (``kobbq translate --replay``)
    # ``kobbq status``: the release's files that are as they were at their last check are not read again
    # (``core.release_folder.verify_files``); a build checks every one before it calls its release current.
    trust_record: bool = False

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def work(self) -> Path:
        """This pipeline's own work folder (another pipeline writing the same release has its own)."""
        return self.folder.work / self.pipeline.key

    @property
    def states(self) -> Path:
        return self.folder.states / self.pipeline.key

    def stage_dir(self, stage: str, sub: str = "") -> Path:
        """Where a stage writes (``sub``: a folder of its own inside; a one-off command writes it all in its folder)."""
        folder = self.one_off if self.one_off is not None else self.work / stage / sub
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def file(self, value: str) -> Path | None:
        return self.pipeline.file(value)

    def decisions_file(self, stage: str, log: str = "") -> Path:
        """Where the runner keeps a stage's decisions (the release merges them into its log)."""
        if self.one_off is not None:
            return one_off_decisions(self.one_off, stage, log)
        return self.work / stage / DECISIONS

    def state(self, stage: str) -> StageState | None:
        return None if self.one_off is not None else read_state(self.states, stage)

    def output(self, stage: str, role: str) -> Path | None:
        """The file an earlier stage recorded under ``role``, or the command gave for it; None before it has run."""
        if (stage, role) in self.given:
            return self.given[(stage, role)]
        state = self.state(stage)
        recorded = state.outputs.get(role) if state else None
        return self.folder.out / recorded if recorded else None

    def once(self, key: object, compute: Callable[[], T]) -> T:
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]  # type: ignore[return-value]

    def decisions(self, stage: str) -> list[Decision]:
        """A stage's decisions: as it returned them in this run, else as its recorded file holds them."""
        return self.once(("decisions", stage), lambda: read_decisions(self.decisions_file(stage)))

    @property
    def corrections(self) -> Path | None:
        return self.file(self.pipeline.config.templates.corrections)

    @property
    def glossary(self) -> Path:
        """The glossary the pipeline names (``[translation] glossary``), else the profile's."""
        return self.file(self.pipeline.config.translation.glossary) or self.profile.file("glossary")

    def templates_file(self) -> Path | None:
        """The template file the pipeline names (a build from one file), else the templates stage's output."""
        return self.file(self.pipeline.config.templates.file) or self.output("templates", "templates")


def require(path: Path | None, what: str, hint: str) -> Path:
    """An input a stage cannot do without: waits for people when it is not configured or not there yet."""
    if path is None:
        raise Waiting(f"{what}: not configured in the pipeline file", hint)
    if not path.exists():
        raise Waiting(f"{what}: {path} does not exist yet", hint)
    return path


def one_off_decisions(folder: Path, stage: str, log: str = "") -> Path:
    """Where a one-off command keeps a stage's decisions: ``decisions_<log>.csv`` (default log: the stage's name)."""
    return folder / f"decisions_{log or stage}.csv"


@dataclass(frozen=True)
class Stage:
    """One stage's contract: what it reads and the module that does its work, imported only when the stage runs, so that
    planning and the up-to-date check read the contract alone. The module defines ``run(ctx)`` and, when ``prepares``,
    ``prepare(ctx)``, which checks the inputs ahead of the flow run (into ``Context.once``)."""

    name: str
    inputs: Callable[[Context], dict[str, Path | None]]
    module: str  # e.g. "tasks.survey.survey_stage"
    settings: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    prepares: bool = False
    made: Callable[[Context, str], str | None] | None = None  # what is wrong with what it made (the release's folder)
    log: str = ""  # a one-off command's decisions file is decisions_<log>.csv (default: the stage's name)
    renders: tuple[Path, ...] = ()  # the project's templates (Jinja) it renders: part of its fingerprint

    @property
    def code(self) -> tuple[str, ...]:
        """Its module, whose code and imports make part of its fingerprint (hashed from the files, not imported)."""
        return (self.module,)

    def run(self, ctx: Context) -> StageOutput:
        return importlib.import_module(self.module).run(ctx)

    def prepare(self, ctx: Context) -> None:
        if self.prepares:
            importlib.import_module(self.module).prepare(ctx)
