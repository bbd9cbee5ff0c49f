"""The runner without Prefect: the embedded example's stages run in plain Python, in order, each through the
observer; a stage that waits or fails stops the run with what it says; a current plan runs nothing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from core.paths import EXAMPLE_PIPELINE, PROJECT_ROOT
from core.pipeline_file import DONE, FAILED, WAITING, load_pipeline
from tasks.pipeline.plan import Plan, context, stages_for
from kobbq.cli import main
from tasks.pipeline.run import execute, plainly, run_plan
from tasks.release.publish import build_lock

BEFORE_RELEASE = 6  # the example's stages up to the survey: the release starts the checks' child (a slow test's)


def example_plan(tmp_path, pipeline_file=EXAMPLE_PIPELINE, stages=BEFORE_RELEASE) -> Plan:
    pipeline = load_pipeline(pipeline_file)
    return Plan.of(context(pipeline, tmp_path / "out"), stages_for(pipeline)[:stages])


def test_the_example_runs_in_plain_python_each_stage_through_the_observer(tmp_path):
    seen = []

    def observe(name, work):
        seen.append(name)
        return plainly(name, work)

    plan = example_plan(tmp_path)
    plan.prepare()
    result = run_plan(plan, observe)
    assert result.finished and not result.failed and result.waiting is None
    assert seen == ["labels", "pretranslate", "postedit", "templates", "survey-export", "survey"]
    assert {name: plan.ctx.state(name).status for name in seen} == dict.fromkeys(seen, DONE)
    assert "3 of 6 template IDs pass" in result.outputs["survey"].summary
    assert execute(example_plan(tmp_path)) is None  # every stage current: nothing runs


def test_a_stage_that_waits_stops_the_run_saying_for_what(tmp_path):
    folder = copy_example(tmp_path)
    shutil.rmtree(folder / "translation" / "returned_chain")  # the translator has not sent the workbooks back
    result = execute(example_plan(tmp_path, folder / EXAMPLE_PIPELINE.name))
    assert (result.finished, result.failed, result.stage) == (False, False, "postedit")
    assert result.waiting.what == "the translator's post-edited workbooks"
    assert result.waiting.waits_for in result.message
    assert load_state(tmp_path, folder, "postedit") == WAITING


def test_a_waiting_message_is_said_once_in_three_lines(tmp_path, capsys):
    """Before: DeepL's waiting text in full on the stage's progress line, then again in the command's paragraph."""
    from kobbq.cli import build_parser
    from kobbq.commands.build import report

    folder = copy_example(tmp_path)
    pipeline = folder / EXAMPLE_PIPELINE.name
    pipeline.write_text("".join(line for line in pipeline.read_text(encoding="utf-8").splitlines(keepends=True)
                                if not line.startswith("cache = ")), encoding="utf-8")  # no recorded DeepL drafts
    plan = example_plan(tmp_path, pipeline, stages=2)
    args = build_parser().parse_args(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")])
    plan.prepare()
    assert report(plan, execute(plan), args) == 0
    said = capsys.readouterr()
    assert said.err.splitlines()[-1].endswith("] pretranslate: WAITING for DeepL")
    printed = said.out.splitlines()
    assert len(printed) == 3 and printed[0].startswith("waiting at stage pretranslate: DeepL drafts: 50 of 50 segment")
    assert (said.err + said.out).count("DEEPL_AUTH_KEY is not set") == 1


def test_a_stage_whose_input_is_bad_fails_with_its_one_line(tmp_path):
    folder = copy_example(tmp_path)
    consensus = folder / "labels" / "consensus.csv"
    consensus.write_text(consensus.read_text(encoding="utf-8").replace(",ST", ",XX", 1), encoding="utf-8")
    result = execute(example_plan(tmp_path, folder / EXAMPLE_PIPELINE.name))
    assert (result.finished, result.failed, result.stage) == (False, True, "labels")
    assert str(consensus) in result.message and "XX" in result.message
    assert load_state(tmp_path, folder, "labels") == FAILED


def copy_example(tmp_path):
    """The example's folder copied, its pipeline's paths outside it made absolute."""
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE_PIPELINE.parent, folder)
    pipeline = folder / EXAMPLE_PIPELINE.name
    pipeline.write_text(pipeline.read_text(encoding="utf-8").replace('"../../', f'"{PROJECT_ROOT}/'), encoding="utf-8")
    return folder


def load_state(tmp_path, folder, stage: str) -> str:
    return context(load_pipeline(folder / EXAMPLE_PIPELINE.name), tmp_path / "out").state(stage).status


@pytest.mark.subprocess  # the release's checks run in their child process
def test_a_release_on_a_read_only_mount_is_up_to_date_and_status_says_when_a_build_runs(tmp_path, capsys):
    out = tmp_path / "out"
    assert execute(example_plan(tmp_path, stages=7)).finished
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    if subprocess.run(["mount", "--bind", str(out), str(read_only)], capture_output=True).returncode != 0:
        pytest.skip("no bind mount on this machine (needs root)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(read_only)], check=True, capture_output=True)
        capsys.readouterr()
        assert main(["build", "--out", str(read_only)]) == 0
        assert "up to date" in capsys.readouterr().out
    finally:
        subprocess.run(["umount", str(read_only)], check=True)
    with build_lock(out / "KoBBQ-example"):
        assert main(["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"a build is running on this release now (process {os.getpid()})" in said
    assert main(["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", str(out)]) == 0
    assert "a build is running" not in capsys.readouterr().out
