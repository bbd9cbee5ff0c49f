"""The machine-translated twin beside a release: its own folder and manifest, a section and a config in the dataset
card, evaluated as a release of its own; a twin that fails its checks is not published, and the card says why.

Built without Prefect from the Japanese example: its post-edited templates are the release, and the twin's
templates are the example's DeepL drafts replayed from the recorded cache (no network)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from core.profile import load_profile
from core.release_folder import changed_files, user_entries
from tasks.audit.report import WrittenRelease, write_release_folder
from tasks.evaluation.prompts import prepare_release
from tasks.labels.consensus import load_consensus
from tasks.release.assemble import expand_release
from tasks.release.inputs import BuildInputs
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.validate import load_checked
from tasks.translation.deepl_client import ReplayTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.pretranslate import pretranslate
from tasks.translation.twin_templates import write_machine_translation
from test_dataset_card import read_card
from test_example_ja import templates_to_adapt

EXAMPLE = PROJECT_ROOT / "templates_raw" / "example_ja"


@pytest.fixture(scope="module")
def twin_templates(tmp_path_factory) -> Path:
    return make_twin_templates(tmp_path_factory.mktemp("twin"))


def make_twin_templates(folder: Path) -> Path:
    """The example's DeepL drafts (replayed) as the twin's template file."""
    ja = load_profile("ja")
    templates, _ = load_bbq_templates(EXAMPLE / "bbq")
    consensus = load_consensus(EXAMPLE / "labels" / "consensus.csv", templates, ja.labels.require_rationale)
    shutil.copy(EXAMPLE / "translation" / "translation_cache.sqlite", folder / "cache.sqlite")
    drafts = pretranslate(templates_to_adapt(templates, consensus), ReplayTranslator(), folder / "cache.sqlite", ja,
                          profile_glossary(ja))
    labels = {s: f.label for s, f in consensus.labels.items()}
    return write_machine_translation(drafts.drafts, ja, labels, folder / "mtBBQ_templates.tsv").tsv_path


def build(folder: Path, twin: Path) -> WrittenRelease:
    ja = load_profile("ja")
    templates = EXAMPLE / "ja_example_templates.tsv"
    loaded, findings = load_checked(templates, None, ja)
    folder.mkdir(parents=True)
    return write_release_folder(folder, BuildInputs(ja, templates, None, 42), loaded, findings,
                                expand_release(loaded.templates, ja, 42), decisions=[], validate=False,
                                parallel={"mtBBQ": twin})


def test_the_twin_is_a_release_of_its_own_beside_the_release(twin_templates, tmp_path, offline_datasets):
    folder = tmp_path / "JaBBQ"
    manifest = build(folder, twin_templates).manifest
    entry = manifest["parallel_releases"]["mtBBQ"]
    assert entry["published"] and entry["folder"] == "mtBBQ"
    assert entry["template_ids_by_label"] == {"ST": 5, "TM": 3}  # every ST/TM template of the example
    assert entry["left_out"] == {"Age|4": "newly created in the language: no machine translation",
                                 "Domestic_area_of_origin|1": "newly created in the language: no machine translation"}
    own = json.loads((folder / "mtBBQ" / "manifest.json").read_text(encoding="utf-8"))
    assert (own["release"], own["profile"], own["twin_of"], own["samples"]) == ("mtBBQ", "ja", "JaBBQ",
                                                                               entry["samples"])
    assert set(own["outputs"]) >= {"mtBBQ_all_samples.tsv", "mtBBQ_test_samples.parquet"}
    # the release's manifest covers the twin's files too: a damaged twin is a damaged release, not a user's file
    assert {f"mtBBQ/{name}" for name in own["outputs"]} | {"mtBBQ/manifest.json"} <= set(manifest["outputs"])
    assert user_entries(folder, manifest) == []
    main_ids = {line.split("\t")[0] for line in (folder / "JaBBQ_test_samples.tsv").read_text(encoding="utf-8")
                .splitlines()[1:] if line.split("\t")[1] != "NC"}
    twin_ids = {line.split("\t")[0] for line in (folder / "mtBBQ" / "mtBBQ_test_samples.tsv")
                .read_text(encoding="utf-8").splitlines()[1:]}
    # the same templates, versions and questions (the fill differs where a post-edit changed a list's length)
    assert {re.sub(r"-\d{3,}-", "-", i) for i in twin_ids} == {re.sub(r"-\d{3,}-", "-", i) for i in main_ids}

    card = read_card(folder)
    assert "## The machine-translated twin (`mtBBQ`)" in card.text and "kobbq eval prepare --release " \
        "path/to/JaBBQ/mtBBQ" in card.text
    twin_config = next(c for c in card.data.configs if c["config_name"] == "mtBBQ")  # its own layout, as the release's
    laid_out = [c for c in load_profile("ja").category_names if (folder / "mtBBQ" / "data" / c).is_dir()]
    assert laid_out and twin_config["data_files"] == [
        {"split": split, "path": [f"mtBBQ/data/{c}/{split}.parquet" for c in laid_out]} for split in ("all_samples",
                                                                                                     "test")]
    twin_rows = offline_datasets(folder, "mtBBQ", "test").to_list()
    assert sorted(r["sample_id"] for r in twin_rows) == sorted(twin_ids)
    assert twin_rows[0].keys() == offline_datasets(folder, "all", "test").to_list()[0].keys()  # the same columns

    prepared = prepare_release(folder / "mtBBQ", tmp_path / "prepared")
    summary = json.loads((tmp_path / "prepared" / "prepared.json").read_text(encoding="utf-8"))
    assert summary["release_name"] == "mtBBQ" and prepared.samples == len(twin_ids)
    (folder / "mtBBQ" / "mtBBQ_test_samples.tsv").write_text("edited\n", encoding="utf-8")
    assert changed_files(folder, manifest) == ["mtBBQ/mtBBQ_test_samples.tsv"]


def test_a_twin_that_fails_its_checks_is_not_published_and_the_card_says_why(twin_templates, tmp_path):
    broken = tmp_path / "mtBBQ_templates.tsv"
    lines = twin_templates.read_text(encoding="utf-8").splitlines(keepends=True)
    broken.write_text(lines[0] + lines[1].replace("\t1\ta\t", "\t1\tx\t", 1) + "".join(lines[2:]), encoding="utf-8")
    folder = tmp_path / "JaBBQ"
    manifest = build(folder, broken).manifest
    entry = manifest["parallel_releases"]["mtBBQ"]
    assert entry["published"] is False and entry["why"].startswith("its templates fail their checks")
    assert "mtBBQ_templates.tsv, row 2, column version" in entry["why"]
    assert not (folder / "mtBBQ").exists()
    card = read_card(folder)
    assert "Not published: its templates fail their checks" in card.text
    assert all(c["config_name"] != "mtBBQ" for c in card.data.configs)
