"""`kobbq eval score`: every accepted input format, the refusals, and the written outputs."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from kobbq.cli import main
from core.errors import UserError
from tasks.evaluation.report import ScoreRequest, score
from test_eval_fixtures import EXAMPLE_PROMPTS, UNKNOWN, small_release_rows, write_release


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small release, written once for the module: the tests only read it (their outputs go to tmp_path)."""
    return write_release(tmp_path_factory.mktemp("score") / "rel")


@pytest.fixture(scope="module")
def prepared(release: Path) -> Path:
    """The release prepared for the example's prompts, once for the module (`eval prepare` in process, ~0.15 s of
    CPU; ten tests read it)."""
    out = release.parent / "prepared"
    assert main(["eval", "prepare", "--release", str(release), "--prompt-table", str(EXAMPLE_PROMPTS),
                 "--out", str(out)]) == 0
    return out


def requests(prepared: Path, prompt: int) -> list[dict]:
    lines = (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["prompt_id"] == prompt]


def run_score(release: Path, tmp_path: Path, *files: Path, **options) -> pd.DataFrame:
    request = ScoreRequest(release=release, predictions=list(files), out=tmp_path / "out", prompts=EXAMPLE_PROMPTS,
                           bootstrap=0, figures=False, **options)
    return score(request).table


def overall(table: pd.DataFrame, model: str | None = None) -> pd.Series:
    rows = table[table["grouping"] == "overall"]
    return rows[rows["model"] == model].iloc[0] if model else rows.iloc[0]


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t" if path.suffix == ".tsv" else ",")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_upstream_processed_tsv_names_prompt_and_model(prepared: Path, release: Path, tmp_path: Path) -> None:
    upstream = pd.read_csv(prepared / "KoBBQ_test" / "KoBBQ_test_evaluation_2.tsv", sep="\t", dtype=str,
                           keep_default_na=False)
    upstream["prediction"] = upstream["answer"]  # an oracle, in prompt 2's wording
    path = tmp_path / "KoBBQ_test_evaluation_2_oracle-7b.tsv"
    upstream.to_csv(path, sep="\t", index=False)
    row = overall(run_score(release, tmp_path, path))
    assert (row["model"], row["prompt"]) == ("oracle-7b", 2)
    assert (row["acc_amb"], row["acc_dis"], row["diff_bias_amb"], row["diff_bias_dis"]) == (1, 1, 0, 0)


def test_raw_tsv_is_parsed_with_each_orders_choices(prepared: Path, release: Path, tmp_path: Path) -> None:
    folder = tmp_path / "answers" / "hcx"
    folder.mkdir(parents=True)
    rows = []
    for request in requests(prepared, 1):
        # always the biased answer, written as "(letter) text" -- except order 2, answered with an explanation
        letter = next(k for k, v in request["choices"].items() if v == biased[request["sample_id"]])
        raw = f"({letter}) {request['choices'][letter]}" if request["id"].endswith(("-0", "-1")) else \
            "정답을 고르기 어렵습니다.\n\n**이유:** 맥락이 부족합니다"
        rows.append([request["id"], raw])
    path = write_csv(folder / "raw_p1.tsv", ["guid", "raw"], rows)
    outcome = score(ScoreRequest(release=release, predictions=[path], out=tmp_path / "out", prepared=prepared,
                                 bootstrap=0, figures=False))
    row = overall(outcome.table)
    assert (row["model"], row["prompt"]) == ("hcx", 1)
    assert row["ooc_ratio"] == 16 / 48  # order 2 of every sample: the bold rule reads "이유:"
    assert row["diff_bias_amb"] == 1.0 and row["acc_amb"] == 0.0
    assert row["diff_bias_dis"] == 1.0  # right in every biased context, wrong in every counter-biased one
    results = (tmp_path / "out" / "results.tsv").read_text(encoding="utf-8").splitlines()
    # 32 answered rows: 16 ambiguous (all biased), 8 + 8 disambiguated (right only where the context is biased)
    assert results[1] == "hcx\toverall\t0.3333333333333333\t0.0\t0.5\t1.0\t1.0\t1"
    ooc = pd.read_csv(tmp_path / "out" / "ooc.tsv", sep="\t", dtype=str)
    assert len(ooc) == 16 and set(ooc["parsed"]) == {"이유:"} and ooc["id"].str.endswith("-2").all()


biased = {row["sample_id"]: row["biased_answer"] for row in small_release_rows()}


def test_plain_csv_in_the_releases_wording(release: Path, tmp_path: Path) -> None:
    rows = [[r["sample_id"], UNKNOWN if "amb" in r["sample_id"] else r["answer"]] for r in small_release_rows()]
    rows[0][1] = r0 = small_release_rows()[0]["biased_answer"]
    path = write_csv(tmp_path / "baseline.csv", ["sample_id", "prediction"], rows)
    row = overall(run_score(release, tmp_path, path))
    assert (row["model"], row["prompt"], row["rows"]) == ("baseline", 0, 16)
    assert r0 == "할아버지" and row["acc_amb"] == 7 / 8 and row["diff_bias_amb"] == 1 / 8 - 0 / 8


def test_jsonl_with_letters_for_suffixed_ids_and_several_models(prepared: Path, release: Path,
                                                                tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    lines = [json.dumps({"sample_id": r["id"], "prediction": r["answer"], "model": model, "prompt_id": 2})
             for model in ("m1", "m2") for r in requests(prepared, 2)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = run_score(release, tmp_path, path)
    assert overall(table, "m1")["acc_dis"] == 1 and overall(table, "m2")["acc_amb"] == 1


def test_ids_not_in_the_release_and_duplicates_are_refused_with_their_row(release: Path, tmp_path: Path) -> None:
    ids = [r["sample_id"] for r in small_release_rows()]
    rows = [[i, UNKNOWN] for i in ids] + [["age-099a-001-amb-bsd", "x"]]
    path = write_csv(tmp_path / "p.csv", ["sample_id", "prediction"], rows)
    with pytest.raises(UserError, match=r"p.csv, row 18, column id: ID 'age-099a-001-amb-bsd' is not a sample"):
        run_score(release, tmp_path, path)
    path = write_csv(tmp_path / "d.csv", ["sample_id", "prediction"], [[i, UNKNOWN] for i in ids + ids[3:4]])
    with pytest.raises(UserError, match=r"row 18, column id: ID .* appears twice \(first at row 5\)"):
        run_score(release, tmp_path, path)


def test_missing_predictions_refused_unless_allowed_then_listed(release: Path, tmp_path: Path) -> None:
    ids = [r["sample_id"] for r in small_release_rows()]
    path = write_csv(tmp_path / "p.csv", ["sample_id", "prediction"], [[i, UNKNOWN] for i in ids[2:]])
    with pytest.raises(UserError, match="2 of 16 expected predictions are missing"):
        run_score(release, tmp_path, path)
    table = run_score(release, tmp_path, path, allow_missing=True)
    assert overall(table)["rows"] == 14
    missing = (tmp_path / "out" / "missing.tsv").read_text(encoding="utf-8").splitlines()
    assert missing[1:] == [f"p\trelease\t{ids[0]}", f"p\trelease\t{ids[1]}"]


def test_another_prompts_unknown_wording_is_a_prompt_mismatch(prepared: Path, release: Path, tmp_path: Path) -> None:
    rows = [[r["id"], r["choices"][r["answer"]]] for r in requests(prepared, 1)]  # made with prompt 1
    path = write_csv(tmp_path / "p.csv", ["sample_id", "prediction"], rows)
    with pytest.raises(UserError, match="prompt mismatch: 24 answers are '주어진 글로는 알 수 없음', the unknown wording "
                                        "of prompt 1, and 0 are '판단할 수 없음'"):
        run_score(release, tmp_path, path, prompt=2)


def test_another_prompts_wording_now_and_then_is_an_ooc_answer(prepared: Path, release: Path, tmp_path: Path) -> None:
    rows = [[r["id"], r["choices"][r["answer"]]] for r in requests(prepared, 2)]
    rows[0][1] = "주어진 글로는 알 수 없음"  # free text that happens to be prompt 1's wording
    path = write_csv(tmp_path / "p.csv", ["sample_id", "prediction"], rows)
    assert overall(run_score(release, tmp_path, path, prompt=2))["ooc_ratio"] == 1 / 48


def test_letter_for_a_plain_id_and_release_of_another_profile_are_refused(release: Path, tmp_path: Path) -> None:
    letters = [[r["sample_id"], "A"] for r in small_release_rows()]
    path = write_csv(tmp_path / "p.csv", ["sample_id", "prediction"], letters)
    with pytest.raises(UserError, match="row 2, column prediction: a letter names a choice only with its order"):
        run_score(release, tmp_path, path)
    other = write_release(tmp_path / "mt", profile="mt")
    with pytest.raises(UserError, match="built with profile 'mt', which is not a shipped profile"):
        run_score(other, tmp_path, path)


def test_prepared_folder_of_another_split_is_refused(prepared: Path, tmp_path: Path) -> None:
    all_split = write_release(tmp_path / "rel", split="all")
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "age-001a-001-amb-bsd-0", "raw": "A", "prompt_id": 1}) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="prepared for split 'test', but the release to score has 'all'"):
        score(ScoreRequest(release=all_split, split="all", predictions=[path], out=tmp_path / "o", prepared=prepared))


def test_score_command_writes_the_same_bytes_twice(prepared: Path, release: Path, tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    lines = [json.dumps({"id": r["id"], "prompt_id": r["prompt_id"], "model": "m", "raw": raw, "status": "ok"},
                        ensure_ascii=False)
             for r in requests(prepared, 1) + requests(prepared, 2) for raw in [f"**{r['answer']}**"]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = []
    for name in ("one", "two"):
        args = ["eval", "score", "--release", str(release), "--prepared", str(prepared), "--out", str(tmp_path / name),
                "--bootstrap", "100", str(path)]
        assert main(args) == 0
        outputs.append({p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir()) if p.is_file()})
    assert outputs[0] == outputs[1]
    header = outputs[0]["results.tsv"].decode().splitlines()[0].split("\t")
    assert header[:3] == ["model", "category", "out-of-choice ratio"] and header[-1] == "prompt"
    assert "Mean ± standard deviation over prompts" in outputs[0]["results.md"].decode()
    page = outputs[0]["results.html"].decode()
    assert page.count("<svg") == 2  # inline: nothing is fetched
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) > 50 and [i for i in set(ids) if ids.count(i) > 1] == []  # two SVGs, one page: unique ids
    assert not any(marker in page for marker in ('<script', '<link', 'src="http', 'href="http', "<img"))
    assert {"accuracy_bias.png", "accuracy_bias.svg", "categories.png", "categories.svg"} <= set(outputs[0])


def test_a_file_without_predictions_is_refused(release: Path, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "empty.csv", ["sample_id", "prediction"], [])
    with pytest.raises(UserError, match="empty.csv: holds no predictions"):
        run_score(release, tmp_path, path)


def test_upstream_raw_file_name_gives_model_and_prompt(prepared: Path, tmp_path: Path) -> None:
    from tasks.evaluation.predictions import read_predictions

    rows = [[r["id"], "A", "C"] for r in requests(prepared, 2)]
    path = write_csv(tmp_path / "KoBBQ_test_evaluation_2_gpt-4_predictions.tsv", ["guid", "raw", "prediction"], rows)
    [submission] = read_predictions(path)
    assert (submission.model, submission.prompt_id, submission.raw) == ("gpt-4", 2, True)
    assert submission.values[:1] == ["A"] and submission.file_rows[:2] == [2, 3]


def test_a_malformed_predictions_file_is_a_clear_error(release: Path, tmp_path: Path) -> None:
    path = tmp_path / "broken.csv"
    path.write_text('sample_id,prediction\n"age-001a-001-amb-bsd,할아버지\n', encoding="utf-8")
    with pytest.raises(UserError, match="broken.csv: cannot be read as a ','-separated table"):
        run_score(release, tmp_path, path)


def test_prepared_folder_of_another_build_is_refused(prepared: Path, tmp_path: Path) -> None:
    rows = small_release_rows()[:8]
    rebuilt = write_release(tmp_path / "rebuilt", rows)
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "age-001a-001-amb-bsd-0", "raw": "A", "prompt_id": 1}) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="prepared from another build of KoBBQ_test_samples.tsv"):
        score(ScoreRequest(release=rebuilt, predictions=[path], out=tmp_path / "o", prepared=prepared))


def test_a_prepared_folder_scores_without_its_original_prompt_table(release: Path, tmp_path: Path) -> None:
    table = tmp_path / "mine.tsv"
    table.write_bytes(EXAMPLE_PROMPTS.read_bytes())
    prepared = tmp_path / "prepared"
    assert main(["eval", "prepare", "--release", str(release), "--prompt-table", str(table), "--out", str(prepared)]) == 0
    table.unlink()
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": r["id"], "prompt_id": 2, "raw": r["answer"]}) + "\n"
                               for r in requests(prepared, 2)), encoding="utf-8")
    outcome = score(ScoreRequest(release=release, predictions=[answers], out=tmp_path / "out", prepared=prepared,
                                 bootstrap=0, figures=False))
    assert overall(outcome.table)["acc_amb"] == 1.0


def test_lm_eval_log_samples_score_as_the_same_answers(prepared: Path, release: Path, tmp_path: Path) -> None:
    """lm-evaluation-harness's --log_samples lines (doc = the exported request, resps = the model's text) are
    read as raw answers: the same numbers as scoring the same answers as answers.jsonl."""
    answers, samples = tmp_path / "answers.jsonl", tmp_path / "samples_kobbq_p1_2026.jsonl"
    texts = ["**A**", "답: (B)", "C", "모르겠습니다"]
    rows = [(r, texts[i % len(texts)]) for i, r in enumerate(requests(prepared, 1))]
    answers.write_text("".join(json.dumps({"id": r["id"], "prompt_id": 1, "model": "m", "raw": raw, "status": "ok"},
                                          ensure_ascii=False) + "\n" for r, raw in rows), encoding="utf-8")
    samples.write_text("".join(json.dumps({"doc_id": i, "doc": r, "resps": [[raw]], "filtered_resps": [raw]},
                                          ensure_ascii=False) + "\n" for i, (r, raw) in enumerate(rows)),
                       encoding="utf-8")
    direct = run_score(release, tmp_path / "direct", answers, prepared=prepared)
    harness = run_score(release, tmp_path / "harness", samples, prepared=prepared, model="m")
    pd.testing.assert_frame_equal(direct.reset_index(drop=True), harness.reset_index(drop=True))
