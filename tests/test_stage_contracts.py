"""Contracts enforced, not declared: the embedded example's pipeline runs with a profile that records every section
a stage reads and an audit hook that sees every file a stage opens. A stage that reads a profile section it does
not declare (``settings``), or a file that is not one of its inputs, the templates it renders or its own work, or
that writes outside its own folder, fails here: its fingerprint would miss a change to it."""

from __future__ import annotations

import functools
import importlib
import re
import sys
from pathlib import Path

import pytest

from core.paths import EXAMPLE_PIPELINE, PROJECT_ROOT
from core.pipeline_file import load_pipeline
from core.profile import Profile, load_profile
from tasks.pipeline.plan import IDENTITY, PIPELINE, Plan, context, stages_for
from tasks.pipeline.run import execute
from tasks.translation.pretranslate_stage import translation_cache

READ: list[tuple[str, str]] = []  # (stage, profile section) read while the stage ran
OPENED: list[tuple[str, Path, str]] = []  # (stage, file, mode)
RUNNING: list[str] = []  # the stage running now, if any


class RecordingProfile(Profile):
    """A profile that records which of its sections are read, and by which stage."""

    def __getattribute__(self, name: str):  # noqa: ANN204
        if RUNNING and name in Profile.model_fields:
            READ.append((RUNNING[-1], name))
        return super().__getattribute__(name)


def audit(event: str, args: tuple) -> None:
    if RUNNING and event == "open" and isinstance(args[0], (str, Path)):
        OPENED.append((RUNNING[-1], Path(args[0]).resolve(), str(args[1] or "r")))


def attributed(name: str, function):  # noqa: ANN001, ANN201
    """``function`` (a stage's run or prepare), with what it reads recorded as read by stage ``name``."""
    @functools.wraps(function)
    def call(ctx):  # noqa: ANN001, ANN202
        RUNNING.append(name)
        try:
            return function(ctx)
        finally:
            RUNNING.pop()
    return call


def inside(path: Path, folders: list[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def replaced(path: Path) -> Path:
    """The file a temporary of ``core.atomic.replacing`` (``.<name>.<pid>.tmp`` beside it) becomes."""
    match = re.fullmatch(r"\.(.+)\.\d+\.tmp", path.name)
    return path.with_name(match[1]) if match else path


@pytest.mark.subprocess  # the release's checks run in their child process
def test_every_stage_reads_only_what_it_declares(tmp_path, monkeypatch):
    pipeline = load_pipeline(EXAMPLE_PIPELINE)
    profile = load_profile(pipeline.profile)
    recording = RecordingProfile.model_construct(**{name: getattr(profile, name) for name in Profile.model_fields})
    ctx = context(pipeline, tmp_path / "out", recording)
    stages = stages_for(pipeline)
    for stage in stages:  # what its module's run and prepare read is recorded as read by the stage
        module = importlib.import_module(stage.module)
        for function in ("run", "prepare") if stage.prepares else ("run",):
            monkeypatch.setattr(module, function, attributed(stage.name, getattr(module, function)))
    sys.addaudithook(audit)  # stays for the test process; it records only while a stage runs
    result = execute(Plan.of(ctx, stages))
    RUNNING.clear()
    assert result is not None and result.finished, result

    undeclared: list[str] = []
    for stage in stages:
        sections = {key.split(".")[0] for key in stage.settings if not key.startswith(PIPELINE)}
        # Identity; where the profile is and its [files] name files that are inputs, checked below by their path.
        sections |= {*IDENTITY, "path", "files"}
        undeclared += [f"{stage.name} reads [{section}]" for section in sorted({s for name, s in READ
                                                                                 if name == stage.name} - sections)]
        inputs = [Path(path).resolve() for path in stage.inputs(ctx).values() if path is not None]
        own = [ctx.work.resolve() / stage.name, ctx.states.resolve()]
        if stage.name == "release":
            own.append(ctx.folder.out.resolve())  # it writes the release, beside the work folders
        if stage.name == "pretranslate":
            own.append(translation_cache(ctx).resolve())  # the DeepL cache every pipeline of the release shares
        readable = inputs + [Path(p).resolve() for p in stage.renders] + own
        for name, path, mode in OPENED:
            if name != stage.name or path.suffix in (".py", ".pyc") or not inside(path, [tmp_path, PROJECT_ROOT]) \
                    or inside(path, [Path(sys.prefix).resolve()]):  # the libraries' own files
                continue
            if any(flag in mode for flag in "wax+"):
                if not inside(replaced(path), own):
                    undeclared.append(f"{stage.name} writes {path}")
            elif not inside(path, readable):
                undeclared.append(f"{stage.name} reads {path}")
    assert "\n".join(sorted(set(undeclared))) == ""
