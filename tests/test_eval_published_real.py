"""The public files, as downloaded, score exactly as the build of the same samples: KoBBQ's data/ folder with
the official test split and answers in the upstream pipeline's raw layout; EsBBQ's per-category files with
EsBBQ's own metrics beside the paper's. Real data, built in-process (no Prefect)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS
from core.profile import load_profile
from kobbq.cli import main
from tasks.evaluation.report import ScoreRequest, score
from tasks.release.assemble import expand_release, write_sample_sets
from tasks.audit.report import write_release_folder
from tasks.release.inputs import BuildInputs
from tasks.templates.validate import load_checked

pytestmark = pytest.mark.realdata
SAME_FILES = ("results.tsv", "results_intervals.tsv", "ooc.tsv", "missing.tsv")


@pytest.fixture(scope="module")
def kobbq_build(tmp_path_factory, kobbq_templates_tsv: Path, ko_profile) -> Path:
    """The real release as `kobbq build --templates` writes it (without the validation suite)."""
    loaded, findings = load_checked(kobbq_templates_tsv, DEFAULT_CORRECTIONS, ko_profile)
    inputs = BuildInputs(ko_profile, kobbq_templates_tsv, DEFAULT_CORRECTIONS, 42)
    release = expand_release(loaded.templates, ko_profile, 42, split=inputs.test_split)
    folder = tmp_path_factory.mktemp("build") / "KoBBQ"
    folder.mkdir()
    write_release_folder(folder, inputs, loaded, findings, release, decisions=[], validate=False)
    return folder


@pytest.fixture(scope="module")
def kobbq_downloaded(kobbq_build: Path, tmp_path_factory) -> Path:
    """KoBBQ's data/ folder as a user downloads it: the sample files, no manifest, no reports."""
    folder = tmp_path_factory.mktemp("KoBBQ") / "data"
    folder.mkdir()
    for name in ("KoBBQ_all_samples.tsv", "KoBBQ_test_samples.tsv"):
        shutil.copy(kobbq_build / name, folder / name)
    return folder


def test_the_rebuilt_test_split_is_the_official_one(kobbq_build: Path, shared_data: Path) -> None:
    with (kobbq_build / "KoBBQ_test_samples.tsv").open(encoding="utf-8", newline="") as handle:
        ids = [row["sample_id"] for row in csv.DictReader(handle, delimiter="\t")]
    assert ids == (shared_data / "kobbq" / "KoBBQ_test_sample_ids.txt").read_text(encoding="utf-8").splitlines()
    manifest = json.loads((kobbq_build / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["test_split"]["method"] == "listed" and manifest["test_samples"] == 2_280
    assert "## Test split\n\n2,280 samples, exactly the IDs listed in KoBBQ_test_sample_ids.txt, in that file's " \
           "order" in (kobbq_build / "table1.md").read_text(encoding="utf-8")


def upstream_raw_answers(prepared: Path, out: Path, seed: int = 11) -> list[Path]:
    """A seeded model's answers to the five prompts as 2_model_inference.py writes them: one file per prompt
    under outputs/raw/KoBBQ_test_<N>/, `time, topic, guid, truth, raw`, csv.writer's \\r\\n, answers that are a
    letter, a letter with its choice, a sentence over several lines, or no choice at all."""
    rng = np.random.default_rng(seed)
    files = []
    for prompt in range(1, 6):
        data = json.loads((prepared / "KoBBQ_test" / f"KoBBQ_test_evaluation_{prompt}.json").read_text(
            encoding="utf-8"))["data"]
        folder = out / "outputs" / "raw" / f"KoBBQ_test_{prompt}"
        folder.mkdir(parents=True)
        path = folder / f"KoBBQ_test_evaluation_{prompt}_synthetic-7b_predictions.tsv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t")
            writer.writerow(["time", "topic", "guid", "truth", "raw"])
            for query, a, b, c, truth, guid in data:
                letter = "ABC"[int(rng.choice(3, p=[0.4, 0.35, 0.25]))]
                text = {"A": a, "B": b, "C": c}[letter]
                raw = [letter, f"({letter}) {text}", f"{letter}: {text}\n\n설명: 맥락에 근거했습니다.",
                       "잘 모르겠습니다."][int(rng.choice(4, p=[0.5, 0.25, 0.2, 0.05]))]
                writer.writerow([f"2024-02-0{prompt} 12:00:00", f"KoBBQ_test_evaluation_{prompt}", guid, truth, raw])
        files.append(path)
    return files


def test_published_raw_answers_score_the_same_against_the_build_and_the_download(
        kobbq_build: Path, kobbq_downloaded: Path, tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(kobbq_downloaded), "--profile", "ko", "--out",
                 str(prepared)]) == 0
    answers = upstream_raw_answers(prepared, tmp_path)
    built = score(ScoreRequest(release=kobbq_build, predictions=answers, out=tmp_path / "built", bootstrap=200))
    downloaded = score(ScoreRequest(release=kobbq_downloaded, predictions=answers, out=tmp_path / "downloaded",
                                    profile="ko", prepared=prepared, bootstrap=200))
    pd.testing.assert_frame_equal(built.table, downloaded.table)
    for name in SAME_FILES:
        assert (tmp_path / "built" / name).read_bytes() == (tmp_path / "downloaded" / name).read_bytes(), name
    overall = built.table[built.table["grouping"] == "overall"]
    assert overall["model"].tolist() == ["synthetic-7b"] * 5 and overall["prompt"].tolist() == [1, 2, 3, 4, 5]
    assert overall["ooc_ratio"].between(0.03, 0.08).all()  # "잘 모르겠습니다." and nothing else is out of choice
    # 30 rows a group: overall, 3 labels, 12 categories; one row per (model, prompt, group) in results.tsv
    assert len((tmp_path / "built" / "results.tsv").read_text(encoding="utf-8").splitlines()) == 1 + 5 * 16


def test_the_same_answers_against_a_seeded_split_are_refused_as_before(kobbq_downloaded: Path, kobbq_templates_tsv,
                                                                       ko_profile, tmp_path: Path) -> None:
    """The gap this closes: against the seeded draw, published answers name samples it does not have."""
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(kobbq_downloaded), "--profile", "ko", "--prompt", "1",
                 "--out", str(prepared)]) == 0
    loaded, _ = load_checked(kobbq_templates_tsv, DEFAULT_CORRECTIONS, ko_profile)
    seeded = tmp_path / "seeded"
    seeded.mkdir()
    write_sample_sets(seeded, "KoBBQ", expand_release(loaded.templates, ko_profile, 42), ("tsv",))
    (seeded / "manifest.json").write_text(json.dumps({"profile": "ko", "release": "KoBBQ"}), encoding="utf-8")
    data = json.loads((prepared / "KoBBQ_test" / "KoBBQ_test_evaluation_1.json").read_text(encoding="utf-8"))
    path = tmp_path / "KoBBQ_test_evaluation_1_m_predictions.tsv"
    path.write_text("guid\traw\n" + "".join(f"{row[-1]}\tA\n" for row in data["data"]), encoding="utf-8")
    with pytest.raises(UserError, match=r"row 2, column id: ID 'age-001a-002-amb-bsd-0' is not a sample of "
                                        r"KoBBQ_test_samples.tsv"):
        score(ScoreRequest(release=seeded, predictions=[path], out=tmp_path / "out", bootstrap=0, figures=False))


@pytest.fixture(scope="module")
def esbbq_build(shared_data: Path, tmp_path_factory) -> Path:
    profile = load_profile("es")
    templates = shared_data / "esbbq" / "templates"
    loaded, findings = load_checked(templates, None, profile)
    release = expand_release(loaded.templates, profile, 42, loaded.vocabulary)
    folder = tmp_path_factory.mktemp("esbbq") / "EsBBQ"
    folder.mkdir()
    write_release_folder(folder, BuildInputs(profile, templates, None, 42), loaded, findings, release, decisions=[],
                         validate=False)
    return folder


def test_esbbq_as_downloaded_scores_as_its_build_with_upstreams_metrics(esbbq_build: Path, tmp_path: Path) -> None:
    """EsBBQ's repository as downloaded (its data_es/ folder) and the build of the same templates; a model that
    always gives the answer this project's rule calls biased. Its diff-bias dis is 1; upstream's
    bias_score_disambig is not, because 4 instances' released question_type says the other thing."""
    downloaded = tmp_path / "EsBBQ-CaBBQ"
    shutil.copytree(esbbq_build / "data_es", downloaded / "data_es")
    from tasks.evaluation.prompts import read_release

    release = read_release(esbbq_build, None)
    answers = tmp_path / "biased.csv"
    pd.DataFrame({"sample_id": release.frame["sample_id"], "prediction": release.frame["biased_answer"]}).to_csv(
        answers, index=False)
    one = score(ScoreRequest(release=esbbq_build, predictions=[answers], out=tmp_path / "built", bootstrap=100,
                             mode="test", figures=False))
    two = score(ScoreRequest(release=downloaded, predictions=[answers], out=tmp_path / "downloaded", profile="es",
                             bootstrap=100, mode="test", figures=False))
    pd.testing.assert_frame_equal(one.table, two.table)
    for name in (*SAME_FILES, "results_bias_score.tsv"):
        assert (tmp_path / "built" / name).read_bytes() == (tmp_path / "downloaded" / name).read_bytes(), name
    overall = one.table[one.table["grouping"] == "overall"].iloc[0]
    assert (overall["acc_amb"], overall["diff_bias_dis"]) == (0.0, 1.0)
    # Upstream's disambiguated bias score from the released columns alone: the biased answer is right exactly
    # where this project's rule says the context supports it; question_type disagrees on 4 instances.
    samples = pd.read_parquet(esbbq_build / "EsBBQ_all_samples.parquet")
    dis = (samples["context_condition"] == "disambig").to_numpy()
    right = release.attributes["biased_context"].to_numpy(bool)
    pro = (samples["question_type"] == "pro-stereo").to_numpy()
    anti = (samples["question_type"] == "anti-stereo").to_numpy()
    expected = (pro & right).sum() / pro.sum() - (anti & right).sum() / anti.sum()
    assert int((dis & (pro != right)).sum()) == 4 and expected < 1.0
    assert overall["bias_score_disambig"] == pytest.approx(expected, abs=0, rel=1e-15)
    assert (overall["acc_ambig"], overall["bias_score_ambig"]) == (0.0, 1.0)
