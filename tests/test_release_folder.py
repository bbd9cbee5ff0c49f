"""A build never loses a user's folder, and ``kobbq status`` reports the release that is really there.

Issue 25, findings 1 and 4: a build replaced whatever was at ``<out>/<name>`` (a clone with its ``.git``;
``--name .`` emptied ``--out``; ``--name ../x`` wrote outside it), and ``status`` called a deleted release,
or one a SIGKILL left between the two renames of publication, "done". Everything here is decided before
Prefect starts, so these run the command in-process, in the fast suite.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES
from core.pipeline_file import DONE, StageState, write_state
from core.release_folder import (LEGACY_KEYS, RETIRED_PREFIX, WRITTEN_BY, check_release_name,
                                 check_replaceable, is_own_release, release_problem)
from kobbq.cli import main
from tasks.pipeline.plan import pipeline_plan
from test_release import built_example, one_error_line

BUILD_EXAMPLE = ["build", "--profile", "ko", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded"]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def release(tmp_path_factory, ko_profile) -> Path:
    return built_example(tmp_path_factory, ko_profile)


def test_the_manifest_carries_the_marker_of_this_project(release):
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["written_by"] == WRITTEN_BY == "kobbq-builder"
    assert is_own_release(manifest)
    check_replaceable(release)  # a release this project wrote may be rebuilt


def test_a_build_never_replaces_a_release_of_another_name(release, tmp_path, capsys):
    """The example and the real KoBBQ both wrote build/KoBBQ: a build replaced the other's release in silence."""
    out = tmp_path / "out"
    shutil.copytree(release, out / "KoBBQ-example")  # the release KoBBQ, in the example's folder
    before = tree(out / "KoBBQ-example")
    assert main(["build", "--out", str(out)]) == 1  # the example's pipeline, stopped before Prefect starts
    err = one_error_line(capsys)
    assert ("holds the release 'KoBBQ' of profile 'ko', and this build writes 'KoBBQ-example' of profile 'ko': "
            "give --out another folder, or delete this one to replace it") in err
    assert tree(out / "KoBBQ-example") == before


def test_a_build_never_replaces_a_release_of_another_profile(release, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(release, out / "KoBBQ")
    manifest = json.loads((out / "KoBBQ" / "manifest.json").read_text(encoding="utf-8"))
    (out / "KoBBQ" / "manifest.json").write_text(json.dumps({**manifest, "profile": "ja"}), encoding="utf-8")
    before = tree(out / "KoBBQ")
    assert main([*BUILD_EXAMPLE, "--out", str(out)]) == 1
    err = one_error_line(capsys)
    assert f"{out / 'KoBBQ'}: holds the release 'KoBBQ' of profile 'ja', and this build writes 'KoBBQ' of profile " \
           "'ko': give --out another folder, or delete this one to replace it" in err
    assert tree(out / "KoBBQ") == before
    check_replaceable(out / "KoBBQ", "ja")  # its own profile's build may replace it


def test_a_release_built_before_the_marker_is_recognised_by_its_keys(release):
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    del manifest["written_by"]
    assert is_own_release(manifest)  # every key this project's builds have always written is there
    assert not is_own_release({key: manifest[key] for key in sorted(LEGACY_KEYS)[:-1]})
    assert not is_own_release({"name": "my-dataset", "version": "1.0"})  # some other tool's manifest


def test_a_users_folder_at_the_release_path_is_refused_in_one_line_and_kept(tmp_path, capsys):
    # The reproduction: a clone with .git where the release would go.
    mine = tmp_path / "W" / "KoBBQ"
    (mine / ".git").mkdir(parents=True)
    (mine / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (mine / "README.md").write_text("mine\n", encoding="utf-8")
    before = tree(mine)
    assert main([*BUILD_EXAMPLE, "--out", str(tmp_path / "W")]) == 1
    err = one_error_line(capsys)
    assert f"{mine}: holds files but no manifest.json, so it is not a release written by kobbq-builder" in err
    assert "move it away" in err
    assert tree(mine) == before
    assert sorted(p.name for p in (tmp_path / "W").iterdir()) == ["KoBBQ"]  # nothing written beside it either


def test_a_folder_whose_manifest_is_someone_elses_or_a_file_is_refused(tmp_path):
    other = tmp_path / "KoBBQ"
    other.mkdir()
    (other / "manifest.json").write_text('{"name": "my-dataset"}', encoding="utf-8")
    with pytest.raises(UserError, match="its manifest.json was not written by kobbq-builder"):
        check_replaceable(other)
    afile = tmp_path / "EsBBQ"
    afile.write_text("notes\n", encoding="utf-8")
    with pytest.raises(UserError, match="is a file, not a release folder"):
        check_replaceable(afile)
    (tmp_path / "link").symlink_to(other)  # a link to a folder (even to a release) is never replaced
    with pytest.raises(UserError, match=f"is a symbolic link \\(to {other}\\); a build replaces a folder, never a link"):
        check_replaceable(tmp_path / "link")
    (tmp_path / "empty").mkdir()
    check_replaceable(tmp_path / "empty")  # an empty folder holds nothing to lose
    check_replaceable(tmp_path / "absent")


@pytest.mark.parametrize("name", [".", "..", "../x", "a/b", "/tmp/x", "", ".staging-KoBBQ-1"])
def test_the_release_name_is_one_plain_folder_name(tmp_path, capsys, name):
    (tmp_path / "D").mkdir()
    (tmp_path / "D" / "keep.txt").write_text("keep\n", encoding="utf-8")
    assert main([*BUILD_EXAMPLE, "--out", str(tmp_path / "D"), "--name", name]) == 1
    assert "is not a plain folder name" in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"] and tree(tmp_path / "D") == {"keep.txt": b"keep\n"}
    with pytest.raises(UserError):
        check_release_name(name)


def test_a_pipeline_file_names_its_release_as_a_plain_folder_name_too(tmp_path, capsys):
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f'profile = "ko"\nname = ".."\n[labels]\nbbq = "{EXAMPLE_PIPELINE.parent / "bbq"}"\n',
                        encoding="utf-8")
    assert main(["build", "--pipeline", str(pipeline), "--out", str(tmp_path / "out")]) == 1
    assert "release name '..' is not a plain folder name" in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline.toml"]


def test_a_truncated_manifest_is_one_error_at_its_line_and_column_and_the_folder_is_kept(release, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(release, out / "KoBBQ")
    manifest = out / "KoBBQ" / "manifest.json"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text[: len(text) // 2], encoding="utf-8")
    line = text[: len(text) // 2].count("\n") + 1
    before = tree(out / "KoBBQ")
    assert main([*BUILD_EXAMPLE, "--out", str(out)]) == 1  # build
    err = one_error_line(capsys)
    assert f"{manifest}, row {line}, column " in err and "not valid JSON" in err and "delete the folder" in err
    assert tree(out / "KoBBQ") == before
    assert main(["eval", "prepare", "--release", str(out / "KoBBQ"), "--out", str(tmp_path / "prepared")]) == 1
    assert f"{manifest}, row {line}, column " in one_error_line(capsys)  # eval prepare
    assert main(["why", "--release", str(out / "KoBBQ"), "age-001a"]) == 1
    assert f"{manifest}, row {line}, column " in one_error_line(capsys)  # why
    assert not (tmp_path / "prepared").exists()


def test_release_problem_says_what_happened_to_the_release(release, tmp_path):
    target = tmp_path / "KoBBQ"
    shutil.copytree(release, target)
    assert release_problem(target) is None
    (target / "table1.md").write_text("edited\n", encoding="utf-8")
    assert "1 file(s) of" in release_problem(target) and "table1.md" in release_problem(target)
    shutil.rmtree(target)
    assert "does not exist" in release_problem(target)
    shutil.copytree(release, tmp_path / f"{RETIRED_PREFIX}KoBBQ-4194999")  # SIGKILL between the two renames
    assert "stopped while publishing" in release_problem(target) and "puts it back" in release_problem(target)


def test_status_checks_that_the_release_it_reports_is_there_and_intact(release, tmp_path, capsys):
    out = tmp_path / "out"
    target = out / "KoBBQ-example"  # where the example's pipeline keeps its release
    shutil.copytree(release, target)
    plan = pipeline_plan(EXAMPLE_PIPELINE, out)
    today = plan.checks[-1].fingerprint
    write_state(plan.ctx.states, StageState("release", DONE, today, "224 samples", {"samples": 224}))
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    (target / "manifest.json").write_text(json.dumps({**manifest, "build_fingerprint": today}), encoding="utf-8")

    def release_line() -> str:
        code = main(["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", str(out)])
        line = capsys.readouterr().out.splitlines()[-1]
        assert code == (1 if line.split()[1] == "damaged" else 0)  # a script that checks the release stops here
        return line

    assert release_line().split()[:2] == ["release", "done"]  # there and intact
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")  # another build's since
    line = release_line()
    assert line.split()[:2] == ["release", "damaged"] and "was built by another build since" in line
    (target / "manifest.json").write_text(json.dumps({**manifest, "build_fingerprint": today}), encoding="utf-8")
    target.rename(out / f"{RETIRED_PREFIX}KoBBQ-example-4194999")  # a build SIGKILLed between the renames
    line = release_line()
    assert line.split()[:2] == ["release", "damaged"] and "stopped while publishing" in line
    shutil.rmtree(out / f"{RETIRED_PREFIX}KoBBQ-example-4194999")  # the release deleted by hand
    line = release_line()
    assert line.split()[:2] == ["release", "damaged"] and "does not exist" in line
