"""Two cultures through the whole chain as their people would run it, against the local fake DeepL.

Japanese: ``kobbq build --pipeline`` waits for the consensus, pays DeepL for the drafts, waits for the
translator, then for the survey company; each returned file is dropped in as it arrives and
``kobbq status`` is read between the steps; the release is then scored from answers written the ways a
Japanese model writes them. Spanish (EsBBQ's workbook format, real BBQ and EsBBQ files): DeepL, the
returned workbooks filled with the released EsBBQ rows, the release, whose instances are the released ones.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from openpyxl import load_workbook

from core.decisions import read_decisions
from core.paths import PROJECT_ROOT
from core.pipeline_file import load_pipeline
from tasks.pipeline.plan import context
from core.profile import load_profile
from fake_deepl import FAKE_KEY, FakeDeepLServer
from tasks.translation.glossary import profile_glossary
from tasks.translation.workbook import FOLLOWS
from twin_convention import convention_breaks, people_words

EXAMPLE = PROJECT_ROOT / "templates_raw" / "example_ja"
HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")

pytestmark = pytest.mark.flow


@pytest.fixture()
def deepl_server(monkeypatch):
    server = FakeDeepLServer().start()
    monkeypatch.setenv("DEEPL_AUTH_KEY", FAKE_KEY)
    monkeypatch.setenv("DEEPL_SERVER_URL", server.url)
    yield server
    server.stop()


def run(capsys, *arguments: str) -> str:
    from kobbq.cli import main

    assert main(list(arguments)) == 0
    return capsys.readouterr().out


def states(capsys, pipeline: Path, out: Path) -> dict[str, str]:
    """``kobbq status``: stage -> status, as a person reads it between the steps."""
    text = run(capsys, "status", "--pipeline", str(pipeline), "--out", str(out))
    return {line.split()[0]: line.split()[1] for line in text.splitlines()[1:]}


def release_texts(folder: Path) -> dict[str, str]:
    """Every file of a release as text (Parquet as its rows), by its path in the folder, for the scan for another
    culture's words."""
    import pyarrow.parquet as pq

    texts = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "data_docs" not in p.parts):
        if path.suffix == ".parquet":
            texts[path.relative_to(folder).as_posix()] = json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False,
                                                                    default=str)
        else:
            texts[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return texts


def test_the_japanese_chain_stage_by_stage_to_a_scored_release(prefect_harness, deepl_server, tmp_path, capsys,
                                                               monkeypatch):
    arrived = tmp_path / "arrived"
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f'''profile = "ja"
[labels]
bbq = "{EXAMPLE / 'bbq'}"
annotations = ["{EXAMPLE / 'labels' / 'annotators'}/*.xlsx"]
consensus = "arrived/consensus.csv"
[translation]
returned = "arrived/returned"
[templates]
groups = "{EXAMPLE / 'groups.csv'}"
newly_created = "{EXAMPLE / 'newly_created.tsv'}"
[survey]
results = "arrived/survey/responses.csv"
reading = "arrived/survey/reading_responses.csv"
''', encoding="utf-8")
    out = tmp_path / "build"
    build = ["build", "--pipeline", str(pipeline), "--out", str(out)]

    said = run(capsys, *build)  # 1. nothing from the annotators yet
    assert "waiting at stage labels" in said and "kobbq labels export --profile ja" in said
    assert f"kobbq status --pipeline {pipeline} --out {out}" in said
    assert states(capsys, pipeline, out)["labels"] == "waiting"

    arrived.mkdir()
    shutil.copy(EXAMPLE / "labels" / "consensus.csv", arrived / "consensus.csv")
    said = run(capsys, *build)  # 2. the consensus: DeepL drafts, workbooks to send
    work = context(load_pipeline(pipeline), out).work  # this pipeline's own work folder
    sent = work / "pretranslate" / "postedit_out"
    names = sorted(p.name for p in sent.glob("*.xlsx"))
    assert names == ["postedit_Age.xlsx", "postedit_Religion.xlsx", "postedit_SES.xlsx"]
    assert "waiting at stage postedit" in said and all(name in said for name in names)
    assert deepl_server.state.billed_characters > 0 and any("<ph" in t for t in deepl_server.state.texts_received)
    assert states(capsys, pipeline, out) == {"labels": "done", "pretranslate": "done", "postedit": "waiting",
                                            "templates": "not", "survey-export": "not", "survey": "not",
                                            "release": "not"}
    for name in names:  # the fake's drafts are the recorded ones: the translator's workbooks (returned before the
        # export had Follows_version rows, and imported as they always were) fit these
        assert ([row for row in load_workbook(sent / name)["_manifest"].iter_rows(values_only=True) if row[5] != FOLLOWS]
                == list(load_workbook(EXAMPLE / "translation" / "returned" / name)["_manifest"].iter_rows(values_only=True)))

    shutil.copytree(EXAMPLE / "translation" / "returned", arrived / "returned")
    said = run(capsys, *build)  # 3. the translator's workbooks: post-edit, templates, questionnaires out
    assert "waiting at stage survey" in said and "kobbq survey export --profile ja" in said
    exported = work / "survey-export"
    for name in ("questions.csv", "reading_questions.csv"):  # the questionnaire the survey company answered
        assert (exported / name).read_text(encoding="utf-8") == (EXAMPLE / "survey" / name).read_text(encoding="utf-8")
    assert states(capsys, pipeline, out)["survey"] == "waiting"

    (arrived / "survey").mkdir()
    for name in ("responses.csv", "reading_responses.csv"):
        shutil.copy(EXAMPLE / "survey" / name, arrived / "survey" / name)
    shutil.copy(exported / "reading_questions.csv", arrived / "survey")  # beside the reading answers
    billed = deepl_server.state.billed_characters
    said = run(capsys, *build)  # 4. the survey company's results: the release
    release = out / "JaBBQ"
    assert f"{release}: 240 samples, 56 in the test split" in said
    assert deepl_server.state.billed_characters == billed  # nothing paid twice
    assert set(states(capsys, pipeline, out).values()) == {"done"}
    assert "up to date" in run(capsys, *build)

    texts = release_texts(release)
    assert not [name for name, text in texts.items() if HANGUL.search(text) or "korea" in text.lower()]
    with (release / "JaBBQ_all_samples.tsv").open(encoding="utf-8") as handle:
        samples = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    disambiguated = [s["context"] for s in samples if s["sample_id"].endswith(("dis-bsd", "dis-cnt"))]
    assert len(disambiguated) == 120 and not [c for c in disambiguated if "。 " in c]
    assert "nothing to compare" in texts["table1.md"] and "equals the paper" not in texts["table1.md"]
    assert "this build's candidates for Japan" in texts["survey_agreement.md"]
    decisions = read_decisions(release / "decisions.csv")
    assert {"labels", "pretranslate", "postedit", "survey", "release"} <= {d.stage for d in decisions}
    assert any(d.reason == "TM template: the Japanese target groups must be found by the survey (type 1)"
               for d in decisions)
    # The biased answer follows the version convention: version a's disambiguated biased sample answers with the
    # non-target person, whom biased_answer (the target) is not.
    age = {s["sample_id"]: s for s in samples if s["sample_id"].startswith("age-002")}
    assert age["age-002a-001-dis-bsd"]["answer"] == "二十代の会社員"
    assert age["age-002a-001-dis-bsd"]["biased_answer"] == "定年退職した男性"

    # The machine-translated twin: a release of its own, through the same checks, every biased answer naming the
    # person BBQ's own answer info says (checked from the English BBQ files alone).
    twin = json.loads(texts["manifest.json"])["parallel_releases"]["mtBBQ"]
    assert twin["published"] and re.fullmatch(r"(\d+) of \1 expectations passed", twin["validation"])
    twin_samples = pd.read_csv(release / "mtBBQ" / "mtBBQ_all_samples.tsv", sep="\t", quoting=csv.QUOTE_NONE,
                               dtype=str, keep_default_na=False)
    words = people_words(EXAMPLE / "bbq", "JA", profile_glossary(load_profile("ja")).targets)
    assert len(twin_samples) == twin["samples"] and convention_breaks(twin_samples, words) == []
    assert "## The machine-translated twin (`mtBBQ`)" in texts["README.md"]

    # The commands that read the release find it and its profile: build/JaBBQ for --profile ja.
    monkeypatch.chdir(tmp_path)
    said = run(capsys, "why", "Age|2", "--profile", "ja")
    assert "Age|2" in said and "物忘れが多い" in said
    # Scored from answers written "答え：A", "答えはAです。", "A" and "(A)": every one read, none out of choice.
    prepared = tmp_path / "prepared"
    said = run(capsys, "eval", "prepare", "--profile", "ja", "--out", str(prepared))
    assert "core/profiles/ja/evaluation_prompts.tsv (profile ja)" in said
    forms = ["答え：{}", "答えは{}です。", "{}", "({})"]
    answers = tmp_path / "answers.jsonl"
    with (prepared / "requests.jsonl").open(encoding="utf-8") as requests, answers.open("w", encoding="utf-8") as file:
        for number, line in enumerate(requests):
            request = json.loads(line)
            file.write(json.dumps({"id": request["id"], "prompt_id": request["prompt_id"], "model": "reader",
                                   "raw": forms[number % 4].format(request["answer"])}, ensure_ascii=False) + "\n")
    said = run(capsys, "eval", "score", "--release", str(release), "--prepared", str(prepared), str(answers),
               "--out", str(tmp_path / "scored"), "--no-figures", "--bootstrap", "0")
    assert said.count("OOC 0.0000, acc amb 1.0000, acc dis 1.0000") == 2  # both prompts


@pytest.mark.realdata
def test_the_spanish_chain_from_deepl_to_the_release(prefect_harness, deepl_server, bbq_templates_dir, shared_data,
                                                     tmp_path, capsys):
    """EsBBQ's workbook format through the pipeline: Religion's BBQ templates labelled, drafted by (fake) DeepL,
    returned with the released EsBBQ rows written in, and generated into the released instances."""
    from tasks.templates.bbq import load_bbq_templates
    from test_translation_es import return_with_released_rows

    bbq = tmp_path / "bbq"
    bbq.mkdir()
    shutil.copy(bbq_templates_dir / "new_templates - Religion.csv", bbq)
    subjects = sorted({t.subject for t in load_bbq_templates(bbq)[0]}, key=lambda s: int(s.rsplit(":", 1)[1]))
    adapted = {"bbq:Religion:1", "bbq:Religion:2", "bbq:Religion:4"}  # EsBBQ's Religion 1-3 (label t)
    arrived = tmp_path / "arrived"
    arrived.mkdir()
    with (arrived / "consensus.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["template", "label", "rationale"])
        writer.writerows([s, "ST", "translated for Spain"] if s in adapted else [s, "SR", "not in this test"]
                         for s in subjects)
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text('profile = "es"\n[labels]\nbbq = "bbq"\nconsensus = "arrived/consensus.csv"\n'
                        '[translation]\nreturned = "arrived/returned"\n', encoding="utf-8")
    out = tmp_path / "build"
    build = ["build", "--pipeline", str(pipeline), "--out", str(out)]

    said = run(capsys, *build)
    assert "waiting at stage postedit" in said and "postedit_Religion.xlsx" in said
    assert deepl_server.state.billed_characters > 0
    assert states(capsys, pipeline, out)["postedit"] == "waiting"

    work = context(load_pipeline(pipeline), out).work
    return_with_released_rows(work / "pretranslate" / "postedit_out" / "postedit_Religion.xlsx",
                              shared_data / "esbbq" / "templates", arrived / "returned")
    said = run(capsys, *build)
    release = out / "EsBBQ"
    assert f"{release}: 36 samples" in said
    assert set(states(capsys, pipeline, out).values()) == {"done"}

    fields = ["instance_id", "template_id", "flipped", "context", "question", "ans0", "ans1", "ans2", "label"]
    with (release / "data_es" / "Religion.full.csv").open(encoding="utf-8") as handle:
        made = list(csv.DictReader(handle))
    with (shared_data / "esbbq" / "released_dev" / "es" / "Religion.full.csv").open(encoding="utf-8") as handle:
        published = [r for r in csv.DictReader(handle) if r["template_id"] in ("1", "2", "3")]
    assert [[r[f] for f in fields] for r in made] == [[r[f] for f in fields] for r in published]
    assert not HANGUL.search((release / "decisions.csv").read_text(encoding="utf-8"))
