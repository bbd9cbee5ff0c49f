"""``kobbq status`` hashes only the release files changed since their last check, and never misses a damage that
changes a file's size or times.

Hashing every file of the real release (95 MB) on every ``status`` was most of what it read. The files as last
verified are recorded beside the release (``<out>/.<name>.verified.json``: never inside it, never in its
manifest); the build writes the record when it publishes, ``status`` when it has checked. These run on the
example's release as the build writes it (no Prefect), in the fast suite.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import core.release_folder as release_folder
from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES
from core.pipeline_file import DONE, StageState, write_state
from core.release_folder import (MANIFEST, read_manifest, read_verified, release_problem, user_entries,
                                 verified_path, write_verified)
from kobbq.cli import main
from tasks.pipeline.plan import pipeline_plan
from test_release import build_into

DAMAGED = "table1.md"


@pytest.fixture(scope="module")
def release(tmp_path_factory, ko_profile) -> Path:
    """Built here, not copied from another module's: the record beside it holds the build's own change times."""
    target = tmp_path_factory.mktemp("verified") / "KoBBQ"
    build_into(target, EXAMPLE_TEMPLATES, ko_profile)
    return target


@pytest.fixture
def target(release, tmp_path) -> Path:
    """A copy of the release, checked once (so its record is there), in a folder of its own."""
    copy = tmp_path / "out" / "KoBBQ-example"  # where the example's pipeline keeps its release
    shutil.copytree(release, copy)
    assert release_problem(copy) is None
    return copy


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The names of the release files the check reads (hashes), in order."""
    names: list[str] = []
    real = release_folder.sha256_file

    def counting(path: Path) -> str:
        names.append(path.name)
        return real(path)

    monkeypatch.setattr(release_folder, "sha256_file", counting)
    return names


def damage_keeping_size_and_mtime(path: Path) -> None:
    """Other bytes, same size, the modification time put back (as ``touch -r`` or ``rsync -t`` would)."""
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:-2] + (b"xx" if data[-2:] != b"xx" else b"yy"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def record_as_it_is_now(target: Path) -> None:
    """A record that takes every file as it is now for intact: what a change the record cannot see (a clock set
    back, a disk edited under the file system) would leave."""
    manifest = read_manifest(target)
    stamps = {name: target.joinpath(name).stat() for name in manifest["outputs"] if name != MANIFEST}
    write_verified(target, manifest, {name: [s.st_size, s.st_mtime_ns, s.st_ctime_ns, manifest["outputs"][name]]
                                      for name, s in stamps.items()})


def test_the_build_records_its_files_beside_the_release_and_not_in_it(release):
    record = verified_path(release)
    manifest = read_manifest(release)
    assert record.is_file() and record.parent == release.parent and record.name == ".KoBBQ.verified.json"
    assert record.name not in manifest["outputs"] and not any(p.name == record.name for p in release.rglob("*"))
    assert user_entries(release, manifest) == []  # the release holds exactly what its manifest lists
    assert sorted(read_verified(release, manifest)) == sorted(set(manifest["outputs"]) - {MANIFEST})


def test_unchanged_files_are_not_read_and_a_changed_one_alone_is(target, hashed):
    assert release_problem(target, trust_record=True) is None
    assert hashed == []
    (target / DAMAGED).write_text("edited\n", encoding="utf-8")  # other bytes, other size, a later time
    problem = release_problem(target, trust_record=True)
    assert problem is not None and f"1 file(s) of {target}" in problem and DAMAGED in problem
    assert hashed == [DAMAGED]
    assert release_problem(target, trust_record=True) == problem  # still damaged: not recorded as verified


def test_a_file_touched_but_unchanged_is_read_once_then_trusted_again(target, hashed):
    os.utime(target / DAMAGED)
    assert release_problem(target, trust_record=True) is None and hashed == [DAMAGED]
    assert release_problem(target, trust_record=True) is None and hashed == [DAMAGED]  # its new times recorded


def test_a_change_that_puts_the_size_and_mtime_back_is_seen_by_its_change_time(target):
    damage_keeping_size_and_mtime(target / DAMAGED)
    problem = release_problem(target, trust_record=True)
    assert problem is not None and DAMAGED in problem


def test_a_change_the_record_cannot_see_is_found_by_the_full_check_only(target, hashed):
    damage_keeping_size_and_mtime(target / DAMAGED)
    record_as_it_is_now(target)
    assert release_problem(target, trust_record=True) is None and hashed == []  # the record's known limit
    problem = release_problem(target)  # every file hashed: the build's check, status --verify
    assert problem is not None and DAMAGED in problem
    assert DAMAGED in release_problem(target, trust_record=True)  # the full check took it out of the record


@pytest.mark.parametrize("record", ["missing", "garbled", "not an object", "another manifest", "entries garbled"])
def test_a_record_that_cannot_be_trusted_means_every_file_is_hashed(target, record):
    damage_keeping_size_and_mtime(target / DAMAGED)
    record_as_it_is_now(target)  # trusted, it would hide the damage
    path = verified_path(target)
    text = path.read_text(encoding="utf-8")
    if record == "missing":
        path.unlink()
    elif record == "garbled":
        path.write_text(text[: len(text) // 2], encoding="utf-8")  # truncated
    elif record == "not an object":
        path.write_text("[]\n", encoding="utf-8")
    elif record == "another manifest":  # the record of a release this one replaced
        path.write_text(text.replace(json.loads(text)["manifest_sha256"], "0" * 64), encoding="utf-8")
    else:
        path.write_text(json.dumps({**json.loads(text), "files": {DAMAGED: "trusted"}}), encoding="utf-8")
    problem = release_problem(target, trust_record=True)
    assert problem is not None and DAMAGED in problem


def test_status_trusts_the_record_and_status_verify_hashes_every_file(target, capsys):
    out = target.parent
    plan = pipeline_plan(EXAMPLE_PIPELINE, out)
    today = plan.checks[-1].fingerprint
    write_state(plan.ctx.states, StageState("release", DONE, today, "224 samples", {"samples": 224}))
    manifest = read_manifest(target)
    (target / MANIFEST).write_text(json.dumps({**manifest, "build_fingerprint": today}), encoding="utf-8")

    def release_line(*options: str) -> list[str]:
        code = main(["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", str(out), *options])
        line = capsys.readouterr().out.splitlines()[-1].split()
        assert code == (1 if line[1] == "damaged" else 0)  # a script that checks the release stops at a damaged one
        return line

    assert release_line()[:2] == ["release", "done"]  # every file hashed: the manifest is another one now
    damage_keeping_size_and_mtime(target / DAMAGED)
    record_as_it_is_now(target)
    assert release_line()[:2] == ["release", "done"]  # the record's known limit
    line = release_line("--verify")
    assert line[:2] == ["release", "damaged"] and f"({DAMAGED});" in line
    assert release_line()[:2] == ["release", "damaged"]  # and the record no longer vouches for it
