"""A release written chunk by chunk and checked batch by batch: the same bytes and the same verdicts as whole."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import tasks.release.checks as checks
import tasks.release.write as write
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release, samples_by_category
from tasks.audit.report import write_release_folder
from tasks.release.checks import SampleSet, validate_release
from tasks.templates.kobbq_format import fill_count, row_chunks
from tasks.release.inputs import BuildInputs
from tasks.release.write import FORMATS, SampleFiles, samples_frame
from tasks.templates.validate import load_checked

UNKNOWN = "알 수 없음"


def write_samples(frame, folder: Path, tsv_name: str, formats: tuple[str, ...] = FORMATS) -> None:
    """One sample set written whole, as the reference a chunked build's files are compared with."""
    with SampleFiles(folder, tsv_name, formats) as files:
        files.append(frame)
SAMPLE_FILES = [f"KoBBQ_{part}_samples.{kind}" for part in ("all", "test") for kind in ("tsv", "jsonl", "parquet")]


@pytest.fixture(scope="module")
def example(ko_profile):
    loaded, findings = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    return loaded, findings, expand_release(loaded.templates, ko_profile, 42)


def write_folder(folder: Path, example, ko_profile, chunk_samples: int, validate: bool = False,
                 progress=lambda line: None) -> dict:
    loaded, findings, release = example
    folder.mkdir()
    return write_release_folder(folder, BuildInputs(ko_profile, EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, 42), loaded,
                                findings, dataclasses.replace(release, chunk_samples=chunk_samples), decisions=[],
                                validate=validate, progress=progress).manifest


def test_row_chunks_cover_every_row_in_order_within_the_limit(example):
    templates = example[0].templates
    sizes = [4 * fill_count(t) for t in templates]
    chunks = list(row_chunks(templates, 20))
    assert [i for rows in chunks for i in rows] == list(range(len(templates)))
    assert all(sum(sizes[i] for i in rows) <= 20 or len(rows) == 1 for rows in chunks)
    assert len(chunks) > 3 and max(len(rows) for rows in chunks) > 1  # several rows per chunk, several chunks
    assert list(row_chunks([], 20)) == [range(0, 0)]  # an empty release is one empty chunk


@pytest.mark.parametrize("chunk_samples", [1, 20])
def test_chunked_sample_files_are_those_of_the_whole_release(tmp_path, example, ko_profile, monkeypatch,
                                                             chunk_samples):
    """One template row a chunk (1) or two to three (20), with row groups of 24 rows so that row groups
    straddle chunks: every sample file equals the whole expansion written at once."""
    monkeypatch.setattr(write, "PARQUET_ROW_GROUP", 24)
    release = example[2]
    whole = tmp_path / "whole"
    whole.mkdir()
    write_samples(samples_frame(release.expansion), whole, "KoBBQ_all_samples.tsv")
    write_samples(samples_frame(release.expansion, release.test_indices), whole, "KoBBQ_test_samples.tsv")
    manifest = write_folder(tmp_path / "chunked", example, ko_profile, chunk_samples)
    for name in SAMPLE_FILES:
        assert (tmp_path / "chunked" / name).read_bytes() == (whole / name).read_bytes(), name
    samples = len(release.expansion)
    assert pq.ParquetFile(whole / "KoBBQ_all_samples.parquet").metadata.num_row_groups == -(-samples // 24) > 1
    assert manifest["samples"] == samples and manifest["test_samples"] == 4 * len(release.templates)


@pytest.mark.realdata
def test_the_real_release_written_in_small_chunks_has_the_same_files(tmp_path, kobbq_templates_tsv, ko_profile):
    loaded, findings = load_checked(kobbq_templates_tsv, DEFAULT_CORRECTIONS, ko_profile)
    release = expand_release(loaded.templates, ko_profile, 42)
    inputs = BuildInputs(ko_profile, kobbq_templates_tsv, DEFAULT_CORRECTIONS, 42)
    manifests = {}
    for name, chunk_samples in (("default", release.chunk_samples), ("small", 2_000)):
        (tmp_path / name).mkdir()
        manifests[name] = write_release_folder(tmp_path / name, inputs, loaded, findings,
                                               dataclasses.replace(release, chunk_samples=chunk_samples),
                                               decisions=[], validate=False).manifest
    assert manifests["small"]["outputs"] == manifests["default"]["outputs"]


@pytest.mark.subprocess  # Great Expectations in a child process: seconds, not milliseconds
def test_a_release_checked_in_small_batches_gets_the_same_report(tmp_path, example, ko_profile, monkeypatch):
    lines: list[str] = []
    write_folder(tmp_path / "whole", example, ko_profile, 16_384, validate=True)
    monkeypatch.setattr(write, "PARQUET_ROW_GROUP", 24)
    monkeypatch.setattr(checks, "VALIDATION_BATCH", 50)  # the child is told: 5 batches of the full set, 2 of the test
    write_folder(tmp_path / "batched", example, ko_profile, 20, validate=True, progress=lines.append)
    assert pq.ParquetFile(tmp_path / "batched" / "KoBBQ_all_samples.parquet").metadata.num_row_groups == 10
    report = json.loads((tmp_path / "batched" / "validation.json").read_text(encoding="utf-8"))
    assert report == json.loads((tmp_path / "whole" / "validation.json").read_text(encoding="utf-8"))
    assert report["success"] and report["expectations"] == 46
    assert lines[0] == "sample files written (Parquet, TSV, JSONL)"
    assert lines[1].startswith("release checks: 46 of 46 expectations passed in ") and len(lines) == 2


@pytest.mark.subprocess  # Great Expectations in a child process: seconds, not milliseconds
def test_failures_in_different_batches_are_added_up_with_their_sample_ids(tmp_path, example, ko_profile, monkeypatch):
    """Row 5 is age-001a-002-amb-cnt (fill 2: rows 4-7); row 70 (age-002a-002-dis-bsd, in the test split)
    takes its ID. In batches of 16 the two rows are in batches 1 and 5: the duplicate, both broken fills, the
    wrong answer and the test sample missing from the full set are still found."""
    monkeypatch.setattr(checks, "VALIDATION_BATCH", 16)
    monkeypatch.setattr(write, "PARQUET_ROW_GROUP", 24)
    _, _, release = example
    frame = samples_frame(release.expansion)
    test = samples_frame(release.expansion, release.test_indices)
    first, duplicate = frame.loc[5, "sample_id"], frame.loc[70, "sample_id"]
    assert duplicate.endswith("-dis-bsd") and first.endswith("-amb-cnt")
    frame.loc[70, "sample_id"] = first
    frame.loc[90, "answer"] = ""  # a third batch: an empty answer
    write_samples(frame, tmp_path, "all.tsv", ("parquet",))
    write_samples(test, tmp_path, "test.tsv", ("parquet",))
    prefixes = {c.name: c.sample_prefix for c in ko_profile.categories}
    expected = {prefixes[c]: n for c, n in samples_by_category(release).items()}
    report = validate_release(SampleSet.staged(tmp_path / "all.parquet"), SampleSet.staged(tmp_path / "test.parquet"),
                              UNKNOWN, expected)
    failed = {(o.sample_set, o.rule): o for o in report.failures()}
    unique = failed[("all", "sample_id is unique")]
    assert (unique.unexpected_count, unique.examples) == (2, [first, first])
    fills = failed[("all", "every fill has its four samples")]
    assert fills.unexpected_count == 5 + 3  # fill 2 of age-001a has five samples, row 70's own fill three
    assert fills.examples[:4] == frame.loc[4:7, "sample_id"].tolist()
    assert failed[("all", "answer has no empty values")].examples == [frame.loc[90, "sample_id"]]
    # row 70 now carries an ambiguous ID but its disambiguated answer, row 90 has no answer at all
    iff = failed[("all", "ambiguous samples, and only they, are answered with the unknown expression")]
    assert iff.unexpected_count == 1 and iff.examples == [first]
    missing = failed[("test", "every test sample is in the full release")]
    assert (missing.unexpected_count, missing.examples) == (1, [duplicate])
    assert not report.success
