"""Evaluating a release in BBQ's column layout (EsBBQ, CaBBQ): the biased answer from answer_info, and
the whole scoring path on the real EsBBQ release."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.errors import UserError
from core.profile import load_profile
from tasks.evaluation.bbq_columns import evaluation_view
from tasks.evaluation.metrics import score_rows
from tasks.evaluation.predictions import Submission, match_submission, runs_frame
from tasks.evaluation.prompts import profile_prompt_table, read_prompt_table, read_release

ES = load_profile("es")


def combination(first: tuple[str, str], second: tuple[str, str], label_neg: int, label_nonneg: int,
                types: tuple[str, str], start: int = 0) -> pd.DataFrame:
    """The four instances of one filled combination as EsBBQ writes them: ans0/ans1 are the two people,
    ans2 unknown; ``first``/``second`` are (answer text, info) of ans0 and ans1."""
    rows = []
    for number, (polarity, condition) in enumerate([("neg", "ambig"), ("neg", "disambig"), ("nonneg", "ambig"),
                                                     ("nonneg", "disambig")]):
        dis = condition == "disambig"
        label = (label_neg if polarity == "neg" else label_nonneg) if dis else 2
        kind = (types[0] if polarity == "neg" else types[1]) if dis else "n/a"
        rows.append({"instance_id": start + number, "template_id": 10, "template_label": "t",
                     "category": "PhysicalAppearance", "context_condition": condition, "question_polarity": polarity,
                     "context": f"context {condition}", "question": f"question {polarity}", "ans0": first[0],
                     "ans1": second[0], "ans2": "unknown", "label": label, "question_type": kind,
                     "stereotyped_groups": ["pregnant"], "answer_info.ans0": list(first),
                     "answer_info.ans1": list(second), "answer_info.ans2": ["unknown", "unknown"]})
    return pd.DataFrame(rows)


def test_the_stereotyped_person_is_found_by_answer_info_whichever_answer_it_is(tmp_path: Path):
    # ans0 is the stereotyped person; the context says the other one cannot work (anti-stereo for neg).
    usual = combination(("La embarazada", "pregnant"), ("La otra", "notPregnant"), 1, 0, ("anti-stereo", "anti-stereo"))
    # The released quirk: ans1 is the stereotyped person, and question_type was computed the other way round.
    swapped = combination(("La empleada que no estaba embarazada", "notPregnant"), ("La embarazada", "pregnant"),
                          0, 1, ("pro-stereo", "anti-stereo"), start=4)
    view, attributes, notes = evaluation_view(pd.concat([usual, swapped], ignore_index=True), ES, tmp_path)
    assert view["biased_answer"].tolist() == [
        "La embarazada", "La embarazada", "La otra", "La otra",  # neg: the pregnant woman; nonneg: the other
        "La embarazada", "La embarazada", "La empleada que no estaba embarazada",
        "La empleada que no estaba embarazada"]
    assert view["answer"].tolist() == ["unknown", "La otra", "unknown", "La embarazada", "unknown",
                                       "La empleada que no estaba embarazada", "unknown", "La embarazada"]
    # A disambiguated context supports the biased answer only where its answer is the biased one: none here.
    assert attributes["dis"].tolist() == [False, True] * 4
    assert attributes["biased_context"].tolist() == [False] * 8
    # The swapped combination's released neg question_type (pro-stereo) disagrees, and is reported.
    assert len(notes) == 1 and notes[0].startswith("1 disambiguated instance(s)")
    assert view["sample_id"].tolist()[:2] == ["physical_appearance-0-amb-neg", "physical_appearance-1-dis-neg"]
    assert set(attributes["template"]) == {"physical_appearance-10"}
    assert view["choices"].iloc[0] == "['La embarazada', 'La otra', 'unknown']"


def test_a_row_whose_answers_name_no_stereotyped_group_stops_with_its_csv_row(tmp_path: Path):
    samples = combination(("La embarazada", "pregnant"), ("La otra", "notPregnant"), 0, 1, ("pro-stereo", "pro-stereo"))
    samples.at[2, "answer_info.ans0"] = ["La embarazada", "tall"]
    with pytest.raises(UserError) as caught:
        evaluation_view(samples, ES, tmp_path / "data_es")
    message = str(caught.value)
    assert "PhysicalAppearance.full.csv, row 4, column answer_info" in message and "neither" in message


def test_an_unknown_polarity_or_label_is_named(tmp_path: Path):
    samples = combination(("La embarazada", "pregnant"), ("La otra", "notPregnant"), 0, 1, ("pro-stereo", "pro-stereo"))
    bad_polarity = samples.assign(question_polarity=["neg", "neg", "positive", "nonneg"])
    with pytest.raises(UserError, match="row 4, column question_polarity: question_polarity is 'positive'"):
        evaluation_view(bad_polarity, ES, tmp_path)
    bad_label = samples.assign(label=[2, 0, 2, 3])
    with pytest.raises(UserError, match="row 5, column label: label is .3., not 0, 1 or 2"):
        evaluation_view(bad_label, ES, tmp_path)


# --- the real EsBBQ release ---------------------------------------------------------------------

# Templates per category, from the statistics table of EsBBQ's README (../shared/data/esbbq/UPSTREAM_README.md).
UPSTREAM_TEMPLATES = {"age": 23, "disability_status": 27, "gender": 66, "lgbtqia": 31, "nationality": 15,
                      "physical_appearance": 32, "race_ethnicity": 51, "religion": 16, "ses": 27,
                      "spanish_region": 35}


@pytest.fixture(scope="module")
def es_release(shared_data: Path, tmp_path_factory) -> Path:
    from tasks.release.assemble import BuildInputs, expand_release
    from tasks.audit.report import write_release_folder
    from tasks.templates.validate import load_checked

    templates = shared_data / "esbbq" / "templates"
    if not (templates / "vocabulary.xlsx").exists():
        pytest.skip("EsBBQ templates not found")
    folder = tmp_path_factory.mktemp("esbbq")
    loaded, findings = load_checked(templates, None, ES)
    release = expand_release(loaded.templates, ES, 42, loaded.vocabulary)
    write_release_folder(folder, BuildInputs(ES, templates, None, 42), loaded, findings, release, decisions=[],
                         validate=False)
    return folder


def _score(release, predictions: np.ndarray) -> pd.DataFrame:
    submission = Submission(model="m", prompt_id=None, source=Path("answers.csv"),
                            ids=release.frame["sample_id"].tolist(), values=list(predictions), raw=False,
                            file_rows=list(range(2, len(release.frame) + 2)))
    run = match_submission(submission, release, {})
    table = score_rows(runs_frame([run]), "test", by=("model", "prompt"))
    return table.set_index(["grouping", "group"])


@pytest.mark.realdata
def test_the_real_release_scores_a_fully_biased_and_a_never_committing_model(es_release: Path):
    release = read_release(es_release, None)
    assert release.split == "all" and len(release.frame) == 27_320
    templates = release.attributes.groupby("category")["template"].nunique().to_dict()
    assert templates == UPSTREAM_TEMPLATES
    # The one known disagreement with the released question_type (Physical appearance template 10).
    assert release.notes and release.notes[0].startswith("4 disambiguated instance(s)")

    biased = _score(release, release.frame["biased_answer"].to_numpy(object)).loc[("overall", "overall")]
    assert (biased["acc_amb"], biased["diff_bias_amb"], biased["diff_bias_dis"], biased["s_dis"]) == (0, 1, 1, 1)
    # Accuracy in disambiguated contexts is then the share of contexts that support the biased answer.
    dis = release.attributes["dis"]
    assert biased["acc_dis"] == pytest.approx(release.attributes.loc[dis, "biased_context"].mean())

    unknown = _score(release, np.full(len(release.frame), "unknown", dtype=object)).loc[("overall", "overall")]
    assert (unknown["acc_amb"], unknown["acc_dis"], unknown["diff_bias_amb"], unknown["diff_bias_dis"]) == (1, 0, 0, 0)


@pytest.mark.realdata
def test_prepare_asks_in_spanish_and_refuses_a_test_split(es_release: Path, tmp_path: Path):
    from kobbq.cli import main

    assert main(["eval", "prepare", "--release", str(es_release), "--out", str(tmp_path / "p"),
                 "--prompt", "1"]) == 0
    first = json.loads((tmp_path / "p" / "requests.jsonl").read_text(encoding="utf-8").splitlines()[0])
    prompts = read_prompt_table(profile_prompt_table(ES))
    assert first["prompt"].startswith(prompts[1].instruction + "\n\nContexto: ")
    assert prompts[1].unknown in first["choices"].values() and "unknown" not in first["choices"].values()
    assert json.loads((tmp_path / "p" / "prepared.json").read_text(encoding="utf-8"))["split"] == "all"
    with pytest.raises(UserError, match="EsBBQ has no test split"):
        read_release(es_release, "test")
