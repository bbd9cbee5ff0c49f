"""A release folder is a Hugging Face dataset: its card reads without warnings, the real ``datasets`` library
loads every config and split offline with the right rows, and ``kobbq publish`` uploads it through the real
``huggingface_hub`` client to a fake Hub on 127.0.0.1."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from core.profile import load_profile
from fake_hub import FAKE_TOKEN, FakeHubServer
from kobbq.cli import main
from tasks.release.assemble import expand_release
from tasks.audit.report import write_release_folder
from tasks.release.dataset_card import rule_counts, size_category
from tasks.release.hf_layout import write_layout
from tasks.release.inputs import BuildInputs
from tasks.templates.validate import load_checked
from test_release import built_example

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard


def build_folder(folder: Path, profile_name: str, templates: Path, validate: bool = False) -> dict:
    """A release built without Prefect (the flow adds only staging), any profile."""
    profile = load_profile(profile_name)
    corrections = profile.existing_file("corrections")
    loaded, findings = load_checked(templates, corrections, profile)
    release = expand_release(loaded.templates, profile, 42, loaded.vocabulary)
    folder.mkdir(parents=True)
    return write_release_folder(folder, BuildInputs(profile, templates, corrections, 42), loaded, findings, release,
                                decisions=[], validate=validate).manifest


@pytest.fixture(scope="module")
def example(tmp_path_factory, ko_profile) -> Path:
    return built_example(tmp_path_factory, ko_profile, "card")


def read_card(folder: Path) -> DatasetCard:
    from huggingface_hub import DatasetCard  # its Hub API, imported when a card is read, not at collection

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # huggingface_hub's parser must read the card without a warning
        return DatasetCard.load(folder / "README.md", ignore_metadata_errors=False)


CONTEXTS, POLARITIES = {"amb": "ambig", "dis": "disambig"}, {"bsd": "neg", "cnt": "nonneg"}


def category_rows(folder: Path, whole: str, prefix: str, category: str) -> list[dict]:
    """A category's rows of the release's Parquet as the dataset holds them: what the sample ID packs, in columns
    as BBQ's copies on the Hub have them, the answer's index as ``label`` (None: not among the choices), and no
    empty ``prediction``."""
    rows = []
    for row in pq.read_table(folder / whole).to_pylist():
        if row["sample_id"].startswith(prefix + "-"):
            context, question = row["sample_id"].split("-")[-2:]
            assert row.pop("prediction") == ""
            rows.append({**row, "category": category, "context_condition": CONTEXTS[context],
                         "question_polarity": POLARITIES[question],
                         "label": row["choices"].index(row["answer"]) if row["answer"] in row["choices"] else None})
    return rows


def test_the_example_card_has_the_hubs_metadata_from_the_profile(example):
    card = read_card(example)
    assert card.data.license == "mit" and card.data.language == ["ko"] and card.data.size_categories == ["n<1K"]
    assert card.data.pretty_name == "KoBBQ" and "multiple-choice" in card.data.task_categories
    manifest = json.loads((example / "manifest.json").read_text(encoding="utf-8"))
    names = [c["config_name"] for c in card.data.configs]
    assert names == ["all", *(c for c in load_profile("ko").category_names if c in manifest["categories"])]
    assert card.data.configs[0]["default"] is True
    categories = names[1:]
    assert card.data.configs[0]["data_files"] == [  # each file listed: a lost one cannot pass unnoticed
        {"split": "all_samples", "path": [f"data/{c}/all_samples.parquet" for c in categories]},
        {"split": "test", "path": [f"data/{c}/test.parquet" for c in categories]}]
    assert "doi = {10.1162/tacl_a_00661}" in card.text  # the paper the culture follows, from the profile
    assert "README.md" in manifest["outputs"] and "data/Age/test.parquet" in manifest["outputs"]
    age = manifest["categories"]["Age"]
    assert f"| `all` | {manifest['samples']:,} | {manifest['test_samples']:,} |" in card.text
    assert f"| `Age` | {age['samples']:,} | {age['test_samples']:,} |" in card.text
    assert "### KoBBQ: Table 1 comparison" in card.text and "built without its validation suite" in card.text
    # How it was made, in the Hub's vocabulary, and what a user must know before using a dataset of stereotypes.
    assert card.data.annotations_creators == ["expert-generated", "crowdsourced"]
    assert card.data.language_creators == ["expert-generated", "machine-generated"]
    assert card.data.multilinguality == ["monolingual"] and card.data.source_datasets == ["extended"]
    limitations = card.text.split("## Bias, risks and limitations")[1].split("\n## ")[0]
    assert "Content warning" in limitations and "social groups in Korea (age, race/ethnicity/nationality, " in \
        " ".join(limitations.split())


def test_the_example_loads_per_category_and_split_with_datasets(example, offline_datasets):
    manifest = json.loads((example / "manifest.json").read_text(encoding="utf-8"))
    prefixes = {c.name: c.sample_prefix for c in load_profile("ko").categories}
    for split, whole in (("all_samples", "KoBBQ_all_samples.parquet"), ("test", "KoBBQ_test_samples.parquet")):
        everything = offline_datasets(example, "all", split).to_list()
        assert sorted(everything, key=lambda r: r["sample_id"]) == sorted(
            (row for category in manifest["categories"] for row in category_rows(example, whole, prefixes[category],
                                                                                  category)),
            key=lambda r: r["sample_id"])
        assert all(any(row[column] not in ("", None) for row in everything) for column in everything[0])  # none empty
        for category, counts in manifest["categories"].items():
            rows = offline_datasets(example, category, split).to_list()
            assert rows == category_rows(example, whole, prefixes[category], category)  # same rows, same order
            assert len(rows) == counts["samples" if split == "all_samples" else "test_samples"]


def test_rows_of_categories_apart_are_laid_out_in_file_order_with_the_answers_index(example, tmp_path):
    """The release's rows come category by category; a file whose categories alternate (here the example's rows
    dealt out from both ends) gets the same per-category files, in file order, and ``label`` is the index of the
    answer's first equal choice (``list.index``), null where the answer is not among them."""
    whole = "KoBBQ_all_samples.parquet"
    table = pq.read_table(example / whole)
    order = [i for pair in zip(range(len(table)), reversed(range(len(table)))) for i in pair][:len(table)]
    choices = table.column("choices").to_pylist()
    choices[order[0]] = [table.column("answer")[order[0]].as_py()] * 2  # the first of two equal choices
    choices[order[1]] = ["none of", "these"]
    table = table.set_column(table.schema.get_field_index("choices"), "choices", [choices]).take(order)
    folder = tmp_path / "KoBBQ"
    folder.mkdir()
    pq.write_table(table, folder / whole)
    pq.write_table(table.slice(0, 8), folder / "KoBBQ_test_samples.parquet")
    profile = load_profile("ko")
    write_layout(folder, profile)
    prefixes = {c.name: c.sample_prefix for c in profile.categories}
    first, unmatched = table.column("sample_id")[0].as_py(), table.column("sample_id")[1].as_py()
    labels = {}
    for category in json.loads((example / "manifest.json").read_text(encoding="utf-8"))["categories"]:
        rows = pq.read_table(folder / "data" / category / "all_samples.parquet").to_pylist()
        assert rows == category_rows(folder, whole, prefixes[category], category)
        labels.update({row["sample_id"]: row["label"] for row in rows if row["sample_id"] in (first, unmatched)})
    assert labels == {first: 0, unmatched: None}


def test_a_folder_that_lost_a_categorys_parquet_fails_to_load_and_is_refused(example, offline_datasets, tmp_path,
                                                                           capsys):
    """With a glob, ``load_dataset(FOLDER, "all")`` read the 16 rows of the two categories left, with no error."""
    import shutil

    copy = tmp_path / "KoBBQ"
    shutil.copytree(example, copy)
    (copy / "data" / "SES" / "test.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="data/SES/test.parquet"):
        offline_datasets(copy, "all", "test")
    for argv in (["publish", "--release", str(copy), "--to-hub", "someone/x", "--dry-run"],
                 ["eval", "prepare", "--release", str(copy), "--out", str(tmp_path / "prepared")]):
        assert main(argv) == 1
        assert "data/SES/test.parquet" in capsys.readouterr().err
    assert not (tmp_path / "prepared").exists()


def test_the_card_counts_each_rule_from_the_decision_log(tmp_path):
    from core.decisions import Decision

    def question(subject: str, number: int, outcome: str, override: bool = False) -> Decision:
        return Decision("survey", "stereotype", subject, "type2-two-thirds", outcome, "r",
                        {"question_id": f"q{number}"}, override)

    # Counted by survey question, as funnel.md counts them: one text asked as two questions (s3) is two, a
    # question judged once per target (q4) is one, dropped when dropped for any target.
    decisions = [question("s1", 1, "keep"), question("s2", 2, "drop"), question("s3", 3, "keep", True),
                 question("s3", 5, "drop"), question("s4", 4, "keep"), question("s4", 4, "drop"),
                 Decision("labels", "bbq_template", "bbq:Age:1", "sample-removed", "drop", "r"),
                 Decision("labels", "bbq_template", "bbq:Age:2", "reference-link", "ST", "r")]
    counts = [(r.stage, r.rule, r.subjects, r.kept, r.dropped, r.overrides) for r in rule_counts(decisions)]
    assert counts == [("labels", "sample-removed", "BBQ templates", 0, 1, 0),
                      ("survey", "type2-two-thirds", "survey questions", 2, 3, 1)]
    assert [size_category(n) for n in (999, 1000, 76_568, 765_680)] == ["n<1K", "1K<n<10K", "10K<n<100K",
                                                                         "100K<n<1M"]


def manifest_files(folder: Path) -> list[str]:
    """The release's files as its manifest lists them (read here, not through the code under test)."""
    return sorted(["manifest.json", *json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["outputs"]])


@pytest.fixture
def with_user_files(example, tmp_path) -> Path:
    """The example release with what a user keeps in it: notes and a git repository."""
    import shutil

    copy = tmp_path / "KoBBQ-example"
    shutil.copytree(example, copy)
    (copy / "my_notes.md").write_text("my notes, not for the Hub\n", encoding="utf-8")
    (copy / ".git").mkdir()
    (copy / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    return copy


def test_publish_dry_run_lists_the_manifests_files_and_the_kept_ones(with_user_files, capsys, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert main(["publish", "--release", str(with_user_files), "--to-hub", "someone/kobbq-example", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = re.findall(r"^  (\S+)  \(", out, flags=re.MULTILINE)
    assert listed == manifest_files(with_user_files)
    assert "README.md" in listed and "data/SES/test.parquet" in listed and "my_notes.md" not in listed
    assert re.search(r"^kept in the folder, not uploaded .*: \.git, my_notes\.md$", out, flags=re.MULTILINE)


def test_publish_uploads_the_release_through_huggingface_hub(with_user_files, monkeypatch, capsys):
    import huggingface_hub.constants

    example = with_user_files

    hub = FakeHubServer().start()
    try:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HF_TOKEN", "hf_wrong_token")
        assert main(["publish", "--release", str(example), "--to-hub", "someone/kobbq-example"]) == 1
        assert "the Hub refused the upload" in capsys.readouterr().err  # 401, one line, nothing uploaded
        monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
        assert main(["publish", "--release", str(example), "--to-hub", "someone/kobbq-example", "--private"]) == 0
        assert "published: " in capsys.readouterr().out
        uploaded = hub.state.repos["datasets/someone/kobbq-example"]
        assert uploaded == {name: (example / name).read_bytes() for name in manifest_files(example)}  # no user file
        assert hub.state.private["datasets/someone/kobbq-example"] is True
        assert any(r.startswith("POST /api/validate-yaml") for r in hub.state.requests)  # the card was checked
    finally:
        hub.stop()


def test_publish_refuses_a_folder_changed_after_the_build(example, tmp_path, capsys):
    import shutil

    copy = tmp_path / "KoBBQ"
    shutil.copytree(example, copy)
    (copy / "data" / "Age" / "test.parquet").write_bytes(b"not the build's file")
    assert main(["publish", "--release", str(copy), "--to-hub", "someone/x", "--dry-run"]) == 1
    assert "data/Age/test.parquet" in capsys.readouterr().err


@pytest.mark.realdata
@pytest.mark.parametrize("profile_name", ["ko", "es", "ca"])
def test_real_releases_load_per_category_and_split(profile_name, shared_data, tmp_path, offline_datasets):
    templates = shared_data / ("kobbq/KoBBQ_templates.tsv" if profile_name == "ko" else "esbbq/templates")
    folder = tmp_path / profile_name
    manifest = build_folder(folder, profile_name, templates)
    card = read_card(folder)
    profile = load_profile(profile_name)
    assert card.data.language == [profile_name] and card.data.size_categories == ["10K<n<100K"]
    assert card.data.license == ("mit" if profile_name == "ko" else "apache-2.0")
    assert [c["config_name"] for c in card.data.configs] == ["all", *profile.category_names]
    split = "test"
    for category in profile.category_names:
        rows = offline_datasets(folder, category, split)
        expected = manifest["categories"][category]["test_samples" if profile_name == "ko" else "samples"]
        assert rows.num_rows == expected
    whole = pq.read_table(folder / f"{profile.release.name}_all_samples.parquet")
    every = offline_datasets(folder, "all", "all_samples" if profile_name == "ko" else "test")
    key = "sample_id" if profile_name == "ko" else "instance_id"
    assert sorted(every[key]) == sorted(whole.column(key).to_pylist()) and every.num_rows == manifest["samples"]
    layout = sum(p.stat().st_size for p in (folder / "data").rglob("*.parquet"))
    parquet = sum(p.stat().st_size for p in folder.glob("*_samples.parquet"))
    assert layout < 1.7 * parquet  # the configs share files: the layout holds the samples once, not per config
