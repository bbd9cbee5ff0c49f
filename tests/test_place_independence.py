"""The same inputs give the same files wherever they are: two checkouts' inputs, built into two build folders of
different depth, give byte-identical releases (every file), and so do their evaluations (``eval prepare``,
``eval run --score``). A path an output records is relative to the output's folder, or reduced to a file name."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from core.paths import EXAMPLE_DIR, EXAMPLE_PIPELINE, PROJECT_ROOT
from kobbq.cli import main

RECORDING = EXAMPLE_DIR / "evaluation" / "recorded_answers.jsonl"
# What the example's pipeline file names outside its folder, relative to the checkout (copied with it).
OUTSIDE = ("survey/ko/example", "core/profiles/ko/corrections.csv", "core/profiles/ko/survey/overrides.csv")


def another_checkout(root: Path) -> Path:
    """The example's inputs where another checkout keeps them: its pipeline file, in the same places around it."""
    for relative in ("templates_raw/example", *OUTSIDE):
        source, target = PROJECT_ROOT / relative, root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
    return root / EXAMPLE_PIPELINE.relative_to(PROJECT_ROOT)


def files(folder: Path) -> dict[str, bytes]:
    """Every file of a folder but the Data Docs' pages (Great Expectations names them by their run's time; the
    manifest does not hash them); a run's answer cache by its rows (a concurrent run stores them in the order the
    answers came)."""
    def content(path: Path) -> bytes:
        if path.suffix != ".sqlite":
            return path.read_bytes()
        with sqlite3.connect(path) as cache:
            return repr(sorted(cache.execute("SELECT * FROM answers"))).encode()

    return {p.relative_to(folder).as_posix(): content(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and "data_docs" not in p.relative_to(folder).parts}


def evaluated(release: Path, root: Path) -> dict[str, bytes]:
    """The release, at ``root/build``, prepared and the example's recorded answers scored beside it, as the README
    runs them: the outputs that name the release keep the same place to it, wherever ``root`` is."""
    shutil.copytree(release, root / "build" / release.name)
    out = root / "evaluation"
    assert main(["eval", "prepare", "--release", str(root / "build" / release.name), "--out",
                 str(out / "prepared")]) == 0
    assert main(["eval", "run", "--prepared", str(out / "prepared"), "--replay", str(RECORDING), "--model",
                 "example-model", "--out", str(out / "runs"), "--score", "--quiet"]) == 0
    return files(out)


def test_two_checkouts_built_into_two_folders_give_the_same_files(example_release, prefect_harness, tmp_path):
    pipeline = another_checkout(tmp_path / "elsewhere" / "checkout")
    out = tmp_path / "another" / "build" / "folder"
    assert main(["build", "--pipeline", str(pipeline), "--out", str(out), "--quiet"]) == 0
    here, there = files(example_release), files(out / example_release.name)
    assert sorted(here) == sorted(there) and "manifest.json" in here and "mtBBQ/manifest.json" in here
    assert [name for name in here if here[name] != there[name]] == []
    for text in (name for name in here if name.endswith((".csv", ".md", ".json", ".html", ".txt"))):
        assert str(tmp_path).encode() not in there[text] and str(PROJECT_ROOT).encode() not in here[text], text
    ours, theirs = evaluated(example_release, tmp_path / "here"), evaluated(out / example_release.name,
                                                                          tmp_path / "there" / "deeper")
    assert "prepared/prepared.json" in ours and "runs/example-model/scores/results.md" in ours
    assert ours.keys() == theirs.keys() and [name for name in ours if ours[name] != theirs[name]] == []
