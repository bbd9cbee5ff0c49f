"""The test split: the IDs a profile lists (KoBBQ's official split), or the seeded draw, and every way a list
can fail to fit the templates (tasks/release/test_split.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES, PROFILE_DIR
from core.profile import load_profile
from tasks.release.assemble import expand_release, write_sample_sets
from tasks.release import test_split as splits  # not its class by name: pytest would collect "TestSplit"
from tasks.release.test_split import LISTED, NONE, SEEDED, choose_test_split
from tasks.templates.validate import load_checked

SUFFIXES = ("amb-bsd", "amb-cnt", "dis-bsd", "dis-cnt")
# The example's 14 template rows and their fills (read by hand from kobbq_example_templates.tsv).
FILLS = {"age-001a": 8, "age-001b": 8, "age-002a": 4, "age-002b": 4, "ses-001a": 4, "ses-001b": 4,
         "religion-001a": 2, "religion-001b": 2, "domestic_area_of_origin-001a": 2,
         "domestic_area_of_origin-001b": 2, "race_ethnicity_nationality-001a": 4,
         "race_ethnicity_nationality-001b": 4, "race_ethnicity_nationality-001c": 4,
         "race_ethnicity_nationality-001d": 4}


@pytest.fixture(scope="module")
def example(ko_profile):
    loaded, _ = load_checked(EXAMPLE_TEMPLATES, DEFAULT_CORRECTIONS, ko_profile)
    return loaded.templates


def ids_of(rows: dict[str, int]) -> list[str]:
    return [f"{row}-{fill:03d}-{suffix}" for row, fill in rows.items() for suffix in SUFFIXES]


def listed(tmp_path: Path, ids: list[str]) -> splits.TestSplit:
    path = tmp_path / "ids.txt"
    path.write_text("\n".join(ids) + "\n", encoding="utf-8")
    return splits.TestSplit(LISTED, 42, "a test's list", path)


# Each row's last fill, rows from last to first: an order and fills the seeded draw would not give.
CHOSEN = {row: fills for row, fills in reversed(FILLS.items())}


def test_a_listed_split_is_its_ids_in_the_lists_order(tmp_path, example, ko_profile):
    ids = ids_of(CHOSEN)
    release = expand_release(example, ko_profile, 42, split=listed(tmp_path, ids))
    sample_ids = release.expansion.columns["sample_id"]
    assert [sample_ids[i] for i in release.test_indices] == ids
    assert release.test_fills == list(FILLS.values())


def test_the_files_list_the_test_split_in_the_lists_order(tmp_path, example, ko_profile):
    """TSV, JSONL and Parquet, written chunk by chunk (one template row a chunk): the list's order in each."""
    ids = ids_of(CHOSEN)
    release = expand_release(example, ko_profile, 42, split=listed(tmp_path, ids))
    release.chunk_samples = 1
    write_sample_sets(tmp_path, "KoBBQ", release, ("tsv", "jsonl", "parquet"))
    tsv = pd.read_csv(tmp_path / "KoBBQ_test_samples.tsv", sep="\t", dtype=str, keep_default_na=False)
    jsonl = [json.loads(line)["sample_id"] for line in (tmp_path / "KoBBQ_test_samples.jsonl").open(encoding="utf-8")]
    parquet = pd.read_parquet(tmp_path / "KoBBQ_test_samples.parquet")["sample_id"].tolist()
    assert tsv["sample_id"].tolist() == jsonl == parquet == ids
    everything = pd.read_csv(tmp_path / "KoBBQ_all_samples.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert tsv.equals(everything.set_index("sample_id").loc[ids].reset_index())  # the same rows, reordered


def test_the_seeded_draw_is_kept_when_asked_for(tmp_path, example, ko_profile):
    seeded = expand_release(example, ko_profile, 42)
    asked = expand_release(example, ko_profile, 42, split=choose_test_split(ko_profile, SEEDED, 42))
    assert asked.test_fills == seeded.test_fills and asked.test_order is None
    assert asked.split.describe(56) == ("56 samples, the four of one fill per template row drawn with seed 42 "
                                       "(asked for by the build: test split seeded; profile ko lists test-split "
                                       "IDs, not used).")


@pytest.mark.parametrize("bad, line, message", [
    ("age-009a-001-amb-bsd", 5, "the templates have no row age-009a"),
    ("religion-001a-003-amb-bsd", 5, "template row religion-001a has fills 001-002"),
    ("religion-001a-1-amb-bsd", 5, "template row religion-001a has fills 001-002"),
    ("age-001a-001-amb", 5, "not <category>-<number><version>-<fill>-amb|dis-bsd|cnt"),
])
def test_an_id_the_templates_do_not_produce_names_its_line(tmp_path, example, ko_profile, bad, line, message):
    ids = ids_of(CHOSEN)
    ids.insert(line - 1, bad)
    with pytest.raises(UserError) as error:
        expand_release(example, ko_profile, 42, split=listed(tmp_path, ids))
    assert error.value.where.row == line and message in error.value.message
    assert "1 of the 57 listed test-split IDs are not samples of the templates (kobbq_example_templates.tsv" \
           in error.value.message
    assert "give --test-split seeded" in error.value.message


def test_a_template_row_without_a_listed_sample_names_the_template_row(tmp_path, example, ko_profile):
    ids = ids_of({row: fill for row, fill in CHOSEN.items() if row != "ses-001b"})
    with pytest.raises(UserError) as error:
        expand_release(example, ko_profile, 42, split=listed(tmp_path, ids))
    assert error.value.where.file == str(EXAMPLE_TEMPLATES) and error.value.where.row == 7  # SES 1 b
    assert "1 template row(s) have no sample in the test-split list ids.txt (first: SES 1 b)" in error.value.message


def test_a_row_needs_the_four_samples_of_one_fill(tmp_path, example, ko_profile):
    ids = ids_of(CHOSEN)
    ids.remove("age-001a-008-dis-cnt")
    with pytest.raises(UserError, match=r"lists 3 of the 4 samples of fill 008 \(not dis-cnt\) of template row Age 1 a"):
        expand_release(example, ko_profile, 42, split=listed(tmp_path, ids))
    two_fills = ids_of(CHOSEN) + ["age-001a-001-amb-bsd"]
    with pytest.raises(UserError, match="lists fills 001, 008 of template row Age 1 a") as error:
        expand_release(example, ko_profile, 42, split=listed(tmp_path, two_fills))
    assert error.value.where.row == len(two_fills)


def test_an_id_listed_twice_names_both_lines(tmp_path, example, ko_profile):
    ids = ids_of(CHOSEN)
    with pytest.raises(UserError, match=r"listed twice \(first on line 1\)") as error:
        expand_release(example, ko_profile, 42, split=listed(tmp_path, [*ids[:3], ids[0], *ids[3:]]))
    assert error.value.where.row == 4


def test_a_twin_release_skips_the_listed_rows_it_lacks(tmp_path, example, ko_profile):
    ids = ids_of(CHOSEN) + ids_of({"age-009a": 1})
    twin = expand_release(example[:2], ko_profile, 42, split=listed(tmp_path, ids), partial=True)
    sample_ids = twin.expansion.columns["sample_id"]
    assert [sample_ids[i] for i in twin.test_indices] == ids_of({"age-001b": 8, "age-001a": 8})


def test_the_ko_profile_lists_the_official_split_with_its_notice(ko_profile):
    split = choose_test_split(ko_profile, "profile", 42)
    assert split.method == LISTED and split.ids_file == PROFILE_DIR / "ko" / "KoBBQ_test_sample_ids.txt"
    lines = split.ids_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(set(lines)) == 2_280 and lines[0] == "age-001a-002-amb-bsd"
    notice = (PROFILE_DIR / "ko" / "KoBBQ_test_sample_ids.NOTICE").read_text(encoding="utf-8")
    assert "naver-ai/KoBBQ" in notice and "MIT License" in notice and "NAVER Cloud Corp." in notice
    assert split.manifest(2_280) == {
        "method": "listed", "chosen_by": "profile ko, [files] test_split", "samples": 2_280,
        "ids_file": "KoBBQ_test_sample_ids.txt",
        "description": "2,280 samples, exactly the IDs listed in KoBBQ_test_sample_ids.txt, in that file's order "
                       "(profile ko, [files] test_split)."}


def test_a_profile_without_a_list_draws_and_says_why(ko_profile, tmp_path):
    unlisted = ko_profile.model_copy(update={"files": ko_profile.files.model_copy(update={"test_split": ""})})
    split = choose_test_split(unlisted, "profile", 7)
    assert (split.method, split.seed, split.chosen_by) == (SEEDED, 7, "profile ko lists no test-split IDs")
    assert choose_test_split(load_profile("es"), "profile", 42).method == NONE
    missing = ko_profile.model_copy(update={"files": ko_profile.files.model_copy(update={"test_split": "gone.txt"})})
    with pytest.raises(UserError, match=r"names its test split's IDs \(\[files\] test_split = 'gone.txt'\)"):
        choose_test_split(missing, "profile", 42)
    with pytest.raises(UserError, match="choose profile or seeded"):
        choose_test_split(ko_profile, "official", 42)


@pytest.mark.realdata
def test_the_real_templates_give_the_official_split_in_its_order(shared_data, kobbq_templates_tsv, ko_profile):
    loaded, _ = load_checked(kobbq_templates_tsv, DEFAULT_CORRECTIONS, ko_profile)
    official = expand_release(loaded.templates, ko_profile, 42, split=choose_test_split(ko_profile, "profile", 42))
    seeded = expand_release(loaded.templates, ko_profile, 42, split=choose_test_split(ko_profile, SEEDED, 42))
    sample_ids = official.expansion.columns["sample_id"]
    ids = [sample_ids[i] for i in official.test_indices]
    assert ids == (shared_data / "kobbq" / "KoBBQ_test_sample_ids.txt").read_text(encoding="utf-8").splitlines()
    # The gap this closes: the seeded draw shares 148 of the 570 rows' fills, 592 of the 2,280 samples.
    assert len(set(ids) - {sample_ids[i] for i in seeded.test_indices}) == 1_688


@pytest.mark.realdata
def test_the_first_public_template_file_cannot_give_the_official_split(kobbq_templates_first_tsv, ko_profile):
    """Religion template 18 changed after it: the official split uses fill 003 of a row that had one fill."""
    loaded, _ = load_checked(kobbq_templates_first_tsv, DEFAULT_CORRECTIONS, ko_profile)
    with pytest.raises(UserError, match="'religion-018a-003-amb-bsd': template row religion-018a has fills 001-001"):
        expand_release(loaded.templates, ko_profile, 42, split=choose_test_split(ko_profile, "profile", 42))


@pytest.mark.subprocess
def test_building_the_example_templates_needs_the_seeded_draw_asked_for(tmp_path):
    """Refused before Prefect starts (its API address answers nothing), in one paragraph naming the line and
    the fix; nothing is written."""
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--templates", str(EXAMPLE_TEMPLATES), "--out",
                             str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    error = result.stderr[result.stderr.index("error: "):]  # after the progress line of the templates loaded
    assert error.startswith(f"error: {PROFILE_DIR / 'ko' / 'KoBBQ_test_sample_ids.txt'}, row 17: 2,240 of the "
                                    "2,280 listed test-split IDs are not samples of the templates")
    assert 'give --test-split seeded (in a pipeline file: test_split = "seeded")' in result.stderr
    assert not (tmp_path / "out").exists()
