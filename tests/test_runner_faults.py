"""The one runner's promises on what people keep in and around a build folder: their own files in a release
survive a rebuild, a run record of another shape is ignored, names are plain folder names, a Prefect home that
cannot be written is one line, and a pipeline whose survey keeps nothing says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core import interrupt
from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES
from core.release_folder import check_release_name, user_entries
from kobbq.cli import main
from tasks.release.publish import publish, recover
from test_release import built_example, one_error_line


@pytest.fixture(scope="module")
def release(tmp_path_factory, ko_profile) -> Path:
    return built_example(tmp_path_factory, ko_profile)


def add_users_files(release: Path) -> None:
    (release / "my_notes.md").write_text("notes\n", encoding="utf-8")
    (release / ".git" / "objects").mkdir(parents=True)
    (release / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (release / "data" / "Age" / "extra.txt").write_text("mine\n", encoding="utf-8")


def test_what_a_user_adds_inside_a_release_is_carried_over_by_a_rebuild(release, tmp_path, ko_profile):
    target = tmp_path / "KoBBQ"
    shutil.copytree(release, target)
    add_users_files(target)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    assert user_entries(target, manifest) == [".git", "data/Age/extra.txt", "my_notes.md"]
    staging = tmp_path / "staging"
    shutil.copytree(release, staging)
    assert publish(staging, target) == [".git", "data/Age/extra.txt", "my_notes.md"]
    assert (target / ".git" / "HEAD").read_text(encoding="utf-8") == "ref: refs/heads/main\n"
    assert (target / ".git" / "objects").is_dir() and (target / "my_notes.md").exists()
    assert (target / "data" / "Age" / "extra.txt").exists()
    assert not list(tmp_path.glob(".retired-*"))


def test_a_build_killed_between_the_renames_still_carries_the_users_files_over(release, tmp_path):
    target = tmp_path / "KoBBQ"
    retired = tmp_path / ".retired-KoBBQ-4194999"  # the previous release, moved aside, then SIGKILL
    shutil.copytree(release, retired)
    add_users_files(retired)
    shutil.copytree(release, target)  # the new release made it in
    recover(target)
    assert (target / "my_notes.md").exists() and (target / ".git" / "HEAD").exists() and not retired.exists()


def test_a_users_file_where_the_new_release_writes_its_own_is_refused_before_anything_moves(release, tmp_path):
    target = tmp_path / "KoBBQ"
    shutil.copytree(release, target)
    staging = tmp_path / "staging"
    shutil.copytree(release, staging)
    (target / "survey_votes.csv").write_text("mine\n", encoding="utf-8")  # not in this release, in the next
    (staging / "survey_votes.csv").write_text("the release's\n", encoding="utf-8")
    with pytest.raises(UserError, match="holds survey_votes.csv, which you added and the new release writes too"):
        publish(staging, target)
    assert (target / "survey_votes.csv").read_text(encoding="utf-8") == "mine\n" and staging.exists()


@pytest.mark.parametrize("record", ["[1, 2]", '{"owner": 5}', '{"owner": {"pid": "x"}}', '"text"', "{"])
def test_a_run_record_of_another_shape_is_set_aside(tmp_path, record):
    path = tmp_path / f"{interrupt.RECORD_PREFIX}11111.json"
    path.write_text(record, encoding="utf-8")
    assert interrupt.reap_orphans(tmp_path) == [] and not path.exists()


@pytest.mark.parametrize("name", ["a\nb", "tab\there", "x" * 201, "é" * 101])
def test_a_name_with_a_control_character_or_too_long_for_the_files_beside_it_is_refused(tmp_path, capsys, name):
    with pytest.raises(UserError):
        check_release_name(name)
    assert main(["build", "--profile", "ko", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded", "--out",
                 str(tmp_path), "--name", name]) == 1
    one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []
    check_release_name("x" * 200)  # the longest name: the lock, staging and .work names beside it still fit


def test_an_empty_name_in_a_pipeline_file_is_refused_as_on_the_command_line(tmp_path, capsys):
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f'profile = "ko"\nname = ""\n[templates]\nfile = "{EXAMPLE_TEMPLATES}"\n', encoding="utf-8")
    assert main(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1
    assert "release name '' is not a plain folder name" in one_error_line(capsys)


def test_a_pipeline_file_without_a_profile_is_an_error(tmp_path, capsys):
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text("", encoding="utf-8")
    assert main(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1
    assert f"{pipeline}: profile: missing (a required key)" in one_error_line(capsys)


def test_a_prefect_home_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", "/proc/kobbq-prefect-home")  # nobody, root included, makes a folder there
    assert main(["build", "--profile", "ko", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded", "--out",
                 str(tmp_path / "out"), "--quiet"]) == 1
    assert "Prefect's home cannot be written" in one_error_line(capsys)


@pytest.mark.slow
def test_an_unwritable_prefect_home_is_one_line_in_a_fresh_process(tmp_path):
    """In a process that has not imported Prefect yet, the home is checked before Prefect's import, which would
    print its own warning about the home ahead of the error line."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PREFECT_HOME": "/proc/kobbq-prefect-home"}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run([sys.executable, "-m", "kobbq", "build", "--out", str(tmp_path / "out")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: /proc/kobbq-prefect-home: Prefect's home cannot be written (Prefect keeps its database and settings "
        "there); set PREFECT_HOME to a folder that can be, or PREFECT_API_URL to a running server"], done.stderr


def test_a_prefect_home_that_is_a_file_is_one_line_before_prefect_starts(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert main(["build", "--profile", "ko", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded", "--out",
                 str(tmp_path / "out"), "--quiet"]) == 1
    err = one_error_line(capsys)
    assert f"{home}: Prefect's home cannot be written" in err and "PREFECT_API_URL" in err


def test_a_survey_that_keeps_no_template_is_one_error_before_prefect_starts(tmp_path, capsys):
    """Every template fails the reading-comprehension rule: the release has nothing to expand (it was a traceback
    from pyarrow, 'Must pass at least one array')."""
    example = Path(__file__).resolve().parent.parent / "survey" / "ko" / "example"
    rows = (example / "reading_results.csv").read_text(encoding="utf-8").splitlines()
    zero = tmp_path / "reading.csv"
    zero.write_text("\n".join([rows[0], *(",".join(r.split(",")[:2] + ["0", "100"]) for r in rows[1:])]) + "\n",
                    encoding="utf-8")
    assert main(["build", "--profile", "ko", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded", "--out", str(tmp_path / "out"),
                 "--survey-results", str(example / "responses.csv"), "--reading-results", str(zero), "--quiet"]) == 1
    err = one_error_line(capsys)
    assert "the survey kept none of the 14 template rows of kobbq_example_templates.tsv: nothing to release" in err
    assert not (tmp_path / "out" / "KoBBQ").exists()


def test_an_annotations_pattern_that_matches_nothing_is_one_error_not_a_silent_vote(tmp_path):
    """A mistyped annotations glob went on without the annotators' votes, saying nothing."""
    from core.paths import EXAMPLE_DIR
    from core.pipeline_file import load_pipeline
    from tasks.pipeline.plan import context
    from tasks.pipeline.stages import STAGE_OF

    STAGE = STAGE_OF["labels"]

    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f'profile = "ko"\n[labels]\nbbq = "{EXAMPLE_DIR / "bbq"}"\n'
                        f'consensus = "{EXAMPLE_DIR / "labels" / "consensus.csv"}"\n'
                        'annotations = ["labels/annotater/*.csv"]\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"labels.annotations = \['labels/annotater/\*.csv'\] matches no file"):
        STAGE.run(context(load_pipeline(pipeline), tmp_path / "out"))


def test_each_pipeline_writing_one_release_has_its_own_state_and_work_folders(tmp_path):
    """The example and the real pipeline shared build/KoBBQ.pipeline and .work: one's status showed the other's."""
    from core.paths import EXAMPLE_PIPELINE
    from core.pipeline_file import load_pipeline
    from tasks.pipeline.plan import context

    copy = tmp_path / "other" / "pipeline.toml"
    copy.parent.mkdir()
    copy.write_text(EXAMPLE_PIPELINE.read_text(encoding="utf-8").replace('test_split = "seeded"', ""),
                    encoding="utf-8")
    one, other = context(load_pipeline(EXAMPLE_PIPELINE), tmp_path / "out"), context(load_pipeline(copy),
                                                                                    tmp_path / "out")
    assert one.folder.path == other.folder.path  # the same release ...
    assert one.states != other.states and one.work != other.work  # ... each pipeline's own records
    assert {one.states.parent, other.states.parent} == {tmp_path / "out" / "KoBBQ-example.pipeline"}
    assert context(load_pipeline(EXAMPLE_PIPELINE), tmp_path / "out").states == one.states  # stable per file


def test_the_summary_of_a_generated_release_says_every_sample_is_in_the_test_split():
    """EsBBQ's build said "0 in the test split" while its test split holds every instance."""
    from tasks.pipeline.release_stage import summary

    assert summary({"samples": 27320, "test_samples": 0, "test_split": {"method": "none"}}) == \
        "27,320 samples, every one of them in the test split (a generated release)"
    assert summary({"samples": 76568, "test_samples": 2280, "test_split": {"method": "listed"}}) == \
        "76,568 samples, 2,280 in the test split"
