"""Release files: byte-identical rebuilds, public column layout, manifest hashes, atomic publication."""

from __future__ import annotations

import ast
import csv
import os
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import tasks.release.write as release_module
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release
from tasks.audit.report import write_release_folder
from tasks.release.inputs import BuildInputs
from tasks.templates.validate import load_checked
from core.fingerprint import sha256_file
from core.release_folder import VERIFIED_SUFFIX
from tasks.release.publish import publish, staged_release

BESIDE = (".lock", VERIFIED_SUFFIX)  # the files a build keeps beside its release: its lock, the verified record
PUBLIC_COLUMNS = ["sample_id", "label_annotation", "context", "question", "choices", "biased_answer", "answer",
                  "bbq_id", "bbq_category", "prediction"]


def build_into(target: Path, templates: Path, profile, seed: int = 42, validate: bool = False) -> dict:
    inputs = BuildInputs(profile, templates, DEFAULT_CORRECTIONS, seed)
    loaded, findings = load_checked(templates, DEFAULT_CORRECTIONS, profile)
    expanded = expand_release(loaded.templates, profile, seed)
    with staged_release(target) as staging:
        manifest = write_release_folder(staging, inputs, loaded, findings, expanded, decisions=[],
                                        validate=validate).manifest
        publish(staging, target, manifest)
    return manifest


def built_example(tmp_path_factory, profile, folder: str = "built") -> Path:
    """The example's release as the build writes it (no Prefect, no validation: only the folder matters), for a
    module's own fixture: built once per test process and copied, so a module that changes its copy changes no
    other's."""
    once = tmp_path_factory.getbasetemp() / f"example-release-{profile.name}" / "KoBBQ"
    if not (once / "manifest.json").exists():
        build_into(once, EXAMPLE_TEMPLATES, profile)
    target = tmp_path_factory.mktemp(folder) / "KoBBQ"
    shutil.copytree(once, target)
    return target


def one_error_line(capsys) -> str:
    """What a command printed on stderr: one ``error:`` line, no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def real_release(tmp_path_factory, kobbq_templates_tsv, ko_profile):
    """The real release, built once (byte-identity across builds is tests/test_cli.py's one determinism test)."""
    one = tmp_path_factory.mktemp("real") / "one"
    return one, build_into(one, kobbq_templates_tsv, ko_profile, validate=True)


@pytest.mark.realdata
def test_real_release_has_every_file_and_its_validation(real_release):
    one, _ = real_release
    names = sorted(p.name for p in one.iterdir() if p.is_file())
    assert "validation.json" in names and "validation.md" in names
    assert len(names) >= 14


@pytest.mark.realdata
def test_real_release_files_have_the_public_layout(real_release):
    one, manifest = real_release
    with (one / "KoBBQ_all_samples.tsv").open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        assert next(reader) == PUBLIC_COLUMNS
    frame = pd.read_csv(one / "KoBBQ_all_samples.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert len(frame) == 76_568 == manifest["samples"]
    assert (frame["prediction"] == "").all()
    assert frame["choices"].str.match(r"^\[.*, '알 수 없음'\]$").all()
    test = pd.read_csv(one / "KoBBQ_test_samples.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert len(test) == 2_280 and set(test["sample_id"]) <= set(frame["sample_id"])
    jsonl = [json.loads(line) for line in (one / "KoBBQ_test_samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["sample_id"] for r in jsonl] == test["sample_id"].tolist()
    assert all(isinstance(r["choices"], list) and len(r["choices"]) == 3 for r in jsonl)
    parquet = pd.read_parquet(one / "KoBBQ_all_samples.parquet")
    assert parquet["sample_id"].tolist() == frame["sample_id"].tolist()


@pytest.mark.realdata
def test_manifest_counts_and_hashes(real_release):
    one, manifest = real_release
    assert manifest["categories"]["Race_ethnicity_nationality"]["samples"] == 52_352
    assert manifest["categories"]["Religion"]["template_ids"] == 20
    assert sum(c["test_samples"] for c in manifest["categories"].values()) == 2_280
    assert manifest["template_ids"] == 269 and manifest["seed"] == 42
    assert set(manifest["samples_by_label"]) == {"ST", "TM", "NC"}
    assert sum(manifest["samples_by_label"].values()) == 76_568
    for name, digest in manifest["outputs"].items():
        assert sha256_file(one / name) == digest
    assert manifest["inputs"]["templates"]["file"] == "KoBBQ_templates.tsv"
    table1 = (one / "table1.md").read_text(encoding="utf-8")
    assert "52,352" in table1 and "NOT EXPLAINED" in table1 and "+496" in table1


def test_a_failed_write_leaves_the_previous_release_untouched(tmp_path, ko_profile, monkeypatch):
    target = tmp_path / "KoBBQ"
    build_into(target, EXAMPLE_TEMPLATES, ko_profile)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(release_module.ParquetRowGroups, "append", crash)
    with pytest.raises(OSError, match="disk full"):
        build_into(target, EXAMPLE_TEMPLATES, ko_profile, seed=7)
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(BESIDE)) == ["KoBBQ"]  # no staging left


def test_the_seed_changes_only_the_test_split(tmp_path, ko_profile):
    first = build_into(tmp_path / "a", EXAMPLE_TEMPLATES, ko_profile, seed=1)
    second = build_into(tmp_path / "b", EXAMPLE_TEMPLATES, ko_profile, seed=2)
    assert first["outputs"]["KoBBQ_all_samples.tsv"] == second["outputs"]["KoBBQ_all_samples.tsv"]
    assert first["outputs"]["KoBBQ_test_samples.tsv"] != second["outputs"]["KoBBQ_test_samples.tsv"]


def test_recovery_restores_a_release_retired_by_a_crash_between_the_renames(tmp_path, tmp_path_factory, ko_profile):
    from tasks.release.publish import RETIRED_PREFIX, STAGING_PREFIX, recover

    target = built_example(tmp_path_factory, ko_profile, "recovery").rename(tmp_path / "KoBBQ")
    before = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()}
    dead = 2**22 + 12345  # above Linux's default pid_max: no such process
    target.rename(tmp_path / f"{RETIRED_PREFIX}KoBBQ-{dead}")
    (tmp_path / f"{STAGING_PREFIX}KoBBQ-{dead}").mkdir()
    live = tmp_path / f"{STAGING_PREFIX}KoBBQ-{os.getppid()}"  # another build still at work
    live.mkdir()
    recover(target)
    assert {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(BESIDE)) == sorted(["KoBBQ", live.name])


def test_a_renamed_input_is_named_in_the_decision_log(tmp_path, ko_profile):
    """Loading is cached by content; the log must still name the file that was actually given."""
    copy = tmp_path / "renamed_copy.tsv"
    copy.write_bytes(EXAMPLE_TEMPLATES.read_bytes())
    build_into(tmp_path / "first", EXAMPLE_TEMPLATES, ko_profile)
    build_into(tmp_path / "second", copy, ko_profile)
    log = (tmp_path / "second" / "decisions.csv").read_text(encoding="utf-8")
    assert "renamed_copy.tsv" in log and EXAMPLE_TEMPLATES.name not in log


def test_a_second_build_of_the_same_release_stops_while_the_first_is_writing(tmp_path):
    """The lock is per process (re-entrant inside one, where the command and its flow both take it)."""
    import subprocess
    import sys

    from tasks.release.publish import build_lock, staged_release

    target = tmp_path / "KoBBQ"
    second = ("from pathlib import Path\nfrom core.errors import UserError\nfrom tasks.release.publish import build_lock\n"
              f"try:\n    with build_lock(Path({str(target)!r})):\n        print('entered')\n"
              "except UserError as error:\n    print(error.render())\n")
    with staged_release(target) as staging:
        (staging / "partial.tsv").write_text("half\n", encoding="utf-8")
        with build_lock(target):  # the same process again: the flow inside the command
            pass
        other = subprocess.run([sys.executable, "-c", second], capture_output=True, text=True, timeout=60)
        assert "another build" in other.stdout and "is writing this release" in other.stdout, other
        assert (staging / "partial.tsv").exists()  # the first build's work is untouched


def test_a_release_larger_than_a_row_group_is_written_in_row_groups_that_read_back_whole(tmp_path, ko_profile,
                                                                                        monkeypatch):
    import pyarrow.parquet as pq

    from tasks.release.write import samples_frame
    from test_release_streaming import write_samples

    loaded, _ = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    frame = samples_frame(expand_release(loaded.templates, ko_profile, 42).expansion)
    monkeypatch.setattr(release_module, "PARQUET_ROW_GROUP", 100)
    write_samples(frame, tmp_path, "all.tsv", ("parquet",))
    written = pq.ParquetFile(tmp_path / "all.parquet")
    assert written.metadata.num_row_groups == -(-len(frame) // 100) > 1
    back = written.read().to_pandas()
    assert back["sample_id"].tolist() == frame["sample_id"].tolist()
    assert [list(c) for c in back["choices"]][:2] == [ast.literal_eval(c) for c in frame["choices"][:2]]
