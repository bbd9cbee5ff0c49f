"""The release's Great Expectations suite: passes on a correct release, names what breaks a wrong one."""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path

import pytest

import tasks.release.assemble as assemble
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release, samples_by_category
from tasks.templates.validate import load_checked
from tasks.release.write import samples_frame
from tasks.release.check_child import ReleaseValidationError
from tasks.release.checks import SampleSet, validate_release
from test_release import BESIDE, build_into

UNKNOWN = "알 수 없음"


@pytest.fixture(scope="module")
def example(ko_profile):
    loaded, _ = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    release = expand_release(loaded.templates, ko_profile, 42)
    prefixes = {c.name: c.sample_prefix for c in ko_profile.categories}
    expected = {prefixes[c]: n for c, n in samples_by_category(release).items()}
    return samples_frame(release.expansion), samples_frame(release.expansion, release.test_indices), expected


def validate(all_frame, test_frame, expected):
    """The suite on the frames staged as the build stages them: Parquet, ``choices`` as lists."""
    with tempfile.TemporaryDirectory() as folder:
        sets = []
        for name, frame in (("all", all_frame), ("test", test_frame)):
            lists = [None if c is None else ast.literal_eval(c) for c in frame["choices"]]
            frame.assign(choices=lists).to_parquet(Path(folder) / f"{name}.parquet", index=False)
            sets.append(SampleSet.staged(Path(folder) / f"{name}.parquet"))
        return validate_release(*sets, UNKNOWN, expected)


def failed_rules(report):
    return {o.rule: o for o in report.failures()}


def test_a_correct_release_passes_every_check(example):
    all_frame, test_frame, expected = example
    report = validate(all_frame, test_frame, expected)
    assert report.success and len(report.outcomes) >= 20


@pytest.fixture(scope="module")
def broken(example):
    """The example with every break the tests below look for, each on rows of its own, checked in one run of the
    suite (a run costs ~1 s of CPU): an ambiguous sample answered with a person, a disambiguated one whose biased
    answer is 'unknown', a missing, a short and a repeated choice list, a lost sample (its fill and category
    short); and a test split that lost a sample. The report, and the rows' sample IDs."""
    all_frame, test_frame, expected = example
    frame = all_frame.copy()
    free = ~frame.index.isin([0, 1, 3, 10])
    amb = frame.index[frame["sample_id"].str.contains("-amb-") & free][0]
    dis = frame.index[frame["sample_id"].str.contains("-dis-") & free][0]
    frame.loc[amb, "answer"] = frame.loc[amb, "biased_answer"]  # ambiguous but answered with a person
    frame.loc[dis, "biased_answer"] = UNKNOWN
    frame.loc[0, "choices"] = None
    frame.loc[1, "choices"] = "['가', '나']"
    frame.loc[3, "choices"] = "['가', '가', '알 수 없음']"
    frame = frame.drop(index=[10])  # a fill loses one sample; its category count no longer matches
    report = validate(frame, test_frame.drop(index=[0]), expected)
    return report, {row: all_frame.loc[row, "sample_id"] for row in (0, 1, 3, amb, dis)}, (amb, dis)


def test_each_broken_rule_is_named_with_its_rows(broken):
    report, ids, (amb, dis) = broken
    failed = failed_rules(report)
    assert not report.success
    assert failed["ambiguous samples, and only they, are answered with the unknown expression"].examples == [ids[amb]]
    assert failed["the biased answer is never 'unknown'"].unexpected_count == 1
    assert failed["every sample has three distinct choices"].examples == [ids[0], ids[1], ids[3]]
    assert failed["every fill has its four samples"].unexpected_count == 3
    assert "samples per category equal the manifest" in failed
    assert "the answer is one of the choices" in failed  # row 3's answer is no longer among its choices


def test_test_split_must_be_a_subset_with_four_samples_per_row(broken):
    report, _, _ = broken
    assert "the test split has four samples per template row" in failed_rules(report)


@pytest.mark.subprocess  # Great Expectations in a child process: seconds, not milliseconds
def test_a_failed_validation_publishes_nothing(tmp_path, ko_profile, monkeypatch):
    target = tmp_path / "KoBBQ"
    build_into(target, EXAMPLE_TEMPLATES, ko_profile)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    original = assemble.samples_frame

    def corrupt(expansion, indices=None):
        frame = original(expansion, indices)
        frame.loc[0, "sample_id"] = "not an id"
        return frame

    monkeypatch.setattr(assemble, "samples_frame", corrupt)
    with pytest.raises(ReleaseValidationError, match="sample_id has the documented form.*not an id"):
        build_into(target, EXAMPLE_TEMPLATES, ko_profile, validate=True)
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(BESIDE)] == ["KoBBQ"]


@pytest.mark.subprocess  # Great Expectations in a child process: seconds, not milliseconds
def test_validation_result_is_written_with_the_release(tmp_path, ko_profile):
    build_into(tmp_path / "KoBBQ", EXAMPLE_TEMPLATES, ko_profile, validate=True)
    result = json.loads((tmp_path / "KoBBQ" / "validation.json").read_text(encoding="utf-8"))
    assert result["success"] is True and result["failed"] == 0
    assert "| all | sample_id is unique | `expect_column_values_to_be_unique` sample_id | pass |" in (
        tmp_path / "KoBBQ" / "validation.md").read_text(encoding="utf-8")
    assert not (tmp_path / "KoBBQ" / "data_docs").exists()  # Great Expectations' pages need CDNs: not written


def test_staged_choices_read_back_as_the_tsv_literals(tmp_path):
    """Lists whose items join to the same text stay apart; a quote inside an item is escaped as Python does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.release.checks import staged_frame

    choices = [["ab", "c", UNKNOWN], ["a", "bc", UNKNOWN], ["ab", "c", UNKNOWN], ["it's", "b", UNKNOWN], None]
    pq.write_table(pa.table({"sample_id": ["s1", "s2", "s3", "s4", "s5"], "choices": choices}),
                   tmp_path / "set.parquet")
    frame = staged_frame(pq.read_table(tmp_path / "set.parquet"))
    assert list(frame.columns) == ["sample_id", "choices"]
    assert frame["choices"].tolist()[:4] == ["['ab', 'c', '알 수 없음']", "['a', 'bc', '알 수 없음']",
                                             "['ab', 'c', '알 수 없음']", "[\"it's\", 'b', '알 수 없음']"]
    assert frame["choices"].isna().tolist() == [False, False, False, False, True]


def test_a_missing_or_short_choice_list_is_reported_not_a_crash(broken):
    report, ids, _ = broken
    failed = failed_rules(report)
    assert failed["choices has no nulls"].examples == [ids[0]]
    assert failed["every sample has three distinct choices"].examples[:2] == [ids[0], ids[1]]


def test_sample_ids_of_template_ids_above_999_have_the_documented_form():
    import re

    from tasks.release.checks import SAMPLE_ID_PATTERN

    assert re.fullmatch(SAMPLE_ID_PATTERN, "age-1001a-001-amb-bsd")  # ID 1001 written by {:03d}
    assert re.fullmatch(SAMPLE_ID_PATTERN, "age-001a-1200-dis-cnt")
    assert not re.fullmatch(SAMPLE_ID_PATTERN, "age-01a-001-amb-bsd")
    assert not re.fullmatch(SAMPLE_ID_PATTERN, "age-001a-1-amb-bsd")  # the expansion pads every fill
