"""The release as reference post-edit (real data), the CLI, and one flow-level run against the fake server."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kobbq.cli import main
from core.profile import load_profile
from core.paths import EXAMPLE_DIR
from tasks.templates.bbq import load_bbq_templates
from core.decisions import read_decisions
from tasks.templates.load import load_kobbq_templates
from tasks.translation.glossary import profile_glossary
from tasks.translation.postedit_stage import link_reference

EXAMPLE = EXAMPLE_DIR / "translation"


@pytest.mark.realdata
def test_release_links_reproduce_the_papers_st_tm_counts(kobbq_templates_tsv, bbq_templates_dir, ko_profile):
    loaded = load_kobbq_templates(kobbq_templates_tsv)
    bbq, _ = load_bbq_templates(bbq_templates_dir)
    result = link_reference(loaded.templates, bbq, ko_profile, profile_glossary(load_profile("ko")))
    with kobbq_templates_tsv.open(encoding="utf-8", newline="") as handle:
        raw = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert result.rows == result.rows_linked == sum(1 for r in raw if r["Label_annotation"] in ("ST", "TM"))
    for category in ko_profile.categories:
        assert result.linked.get((category.name, "ST"), 0) == category.paper.st, category.name
        assert result.linked.get((category.name, "TM"), 0) == category.paper.tm, category.name
    assert not result.unlinked
    assert ("Age|1", "Walmart", "이마트") in result.substitutions  # the paper's own example
    links = [d for d in result.decisions if d.rule == "postedit-reference-link"]
    assert len(links) == len({(r["Category"], r["ID"]) for r in raw if r["Label_annotation"] in ("ST", "TM")})


def test_dry_run_prints_characters_and_cost_without_a_key(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEEPL_AUTH_KEY", raising=False)
    code = main(["translate", "--dry-run", "--bbq", str(EXAMPLE), "--labels", str(EXAMPLE / "labels.csv"),
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "would send 32 segments" in out and "estimated cost" in out
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_a_replay_missing_segments_is_one_error_before_anything_starts(tmp_path, capsys, monkeypatch):
    """A replay with segments missing from the cache said "run the same command again" after Prefect's start-up."""
    monkeypatch.delenv("DEEPL_AUTH_KEY", raising=False)
    code = main(["translate", "--replay", "--bbq", str(EXAMPLE), "--labels", str(EXAMPLE / "labels.csv"),
                 "--cache", str(tmp_path / "empty.sqlite"), "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "32 of 32 segment(s) are not in the translation cache" in err
    assert "a replay sends nothing to DeepL; run without --replay, with DEEPL_AUTH_KEY set" in err
    assert not (tmp_path / "t").exists()


def test_waiting_for_deepl_says_once_what_is_missing_and_never_that_deepl_stopped(tmp_path, monkeypatch):
    """No key and an empty cache: DeepL was never asked, so it did not stop; the message says what is missing and
    what to do once each, in a few lines (it was a 956-character paragraph saying it twice)."""
    from core.pipeline_file import LabelsSection, PipelineConfig
    from tasks.pipeline.plan import one_off_plan
    from core.stage_contract import Waiting
    from tasks.pipeline.stages import STAGE_OF

    STAGE = STAGE_OF["pretranslate"]

    monkeypatch.delenv("DEEPL_AUTH_KEY", raising=False)
    ko = load_profile("ko")
    plan = one_off_plan(STAGE, PipelineConfig(profile="ko", labels=LabelsSection(bbq=str(EXAMPLE))), ko, tmp_path,
                        given={("labels", "labels"): EXAMPLE / "labels.csv"})
    with pytest.raises(Waiting) as waiting:
        STAGE.run(plan.ctx)
    message = str(waiting.value)
    assert message.startswith("DeepL drafts: 32 of 32 segment(s) are not in the translation cache ")
    assert "stopped" not in message and message.count("DEEPL_AUTH_KEY") == 1 and message.count("translation cache") == 1
    assert len(message) - len(str(tmp_path)) * 2 - len(str(EXAMPLE)) * 2 < 300  # three lines, paths aside


def test_import_names_the_cell_of_a_problem(tmp_path, capsys):
    from openpyxl import load_workbook

    workbook = load_workbook(EXAMPLE / "returned" / "postedit_Age.xlsx")
    workbook["templates"].cell(3, 9).value = "[N1]과 [N2]가 만났고 [N9]은 조용했다."
    broken = tmp_path / "postedit_Age.xlsx"
    workbook.save(broken)
    from tasks.translation.postedit import import_postedit
    from core.profile import load_profile

    result = import_postedit([broken], load_profile("ko"), tmp_path / "out.tsv", profile_glossary(load_profile("ko")))
    assert [f.render() for f in result.errors] == [
        f"error: {broken}, sheet templates, row 3, column Post-edit: slot [N9] is used but not declared in Names "
        "or Lexical_diversity [slot-undeclared]"]


@pytest.mark.flow
def test_translate_then_import_flows(prefect_harness, tmp_path, monkeypatch):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fake_deepl import FAKE_KEY, FakeDeepLServer

    from core.pipeline_file import LabelsSection, PipelineConfig, TranslationSection
    from runs import run
    from tasks.pipeline.plan import one_off_plan
    from tasks.pipeline.stages import STAGE_OF

    POSTEDIT, PRETRANSLATE = STAGE_OF["postedit"], STAGE_OF["pretranslate"]

    ko = load_profile("ko")
    server = FakeDeepLServer().start()
    try:
        monkeypatch.setenv("DEEPL_AUTH_KEY", FAKE_KEY)
        monkeypatch.setenv("DEEPL_SERVER_URL", server.url)
        config = PipelineConfig(profile="ko", labels=LabelsSection(bbq=str(EXAMPLE)))
        result = run(one_off_plan(PRETRANSLATE, config, ko, tmp_path / "t",
                                  given={("labels", "labels"): EXAMPLE / "labels.csv"}))
    finally:
        server.stop()
    drafted = result.outputs["pretranslate"]
    assert drafted.counts["chars_billed"] == server.state.billed_characters > 0
    assert sorted(p.name for p in drafted.outputs["workbooks"].glob("*.xlsx")) == ["postedit_Age.xlsx",
                                                                                 "postedit_Gender_identity.xlsx"]
    assert FAKE_KEY not in (tmp_path / "t" / "decisions_translation.csv").read_text(encoding="utf-8")
    # the twin keeps the template whose versions BBQ's answer info tells (Age 1); the others are left out, with why
    assert [t.key for t in load_kobbq_templates(drafted.outputs["mt_templates"]).templates] == ["Age|1|a", "Age|1|b"]
    assert sum(d.rule == "mt-twin" and d.outcome == "left out" for d in drafted.decisions) == 2
    returned = TranslationSection(workbooks=[str(p) for p in sorted((EXAMPLE / "returned").glob("*.xlsx"))])
    imported = run(one_off_plan(POSTEDIT, PipelineConfig(profile="ko", translation=returned), ko, tmp_path / "p"))
    assert imported.outputs["postedit"].counts["rows"] == 6
    decisions = read_decisions(tmp_path / "p" / "decisions_postedit.csv")
    assert {d.rule for d in decisions} == {"postedit-import", "cultural-substitution"}
