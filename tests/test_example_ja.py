"""The Japanese example is one chain, and each place where a person's file meets the pipeline checks it.

English BBQ templates -> three annotators' workbooks and the consensus -> recorded DeepL drafts ->
returned post-edit workbooks -> (with groups.csv and newly_created.tsv) exactly ja_example_templates.tsv,
which is written by hand; the expected numbers below are worked out by hand, never by the code under test.
"""

from __future__ import annotations

import math
from dataclasses import replace

import csv
import shutil
from pathlib import Path

import pytest
from openpyxl import load_workbook

from core.errors import UserError
from core.findings import FindingsError
from core.paths import PROJECT_ROOT
from core.pipeline_file import load_pipeline
from core.profile import load_profile
from tasks.labels.agreement import agreement
from tasks.labels.annotations import import_annotations
from adapted import templates_to_adapt
from tasks.labels.consensus import load_consensus
from tasks.labels.template_set import load_label_items
from core.stage_contract import Context, Waiting
from tasks.pipeline.plan import STAGE_LIST, context, each_stage
from tasks.survey.funnel import render_group_check
from tasks.survey.inputs import SurveyInputs
from tasks.survey.survey_stage import survey_stage
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.load import load_kobbq_templates
from tasks.templates.templates_stage import check_versions, import_newly_created, merge_groups
from tasks.templates.validate import load_templates
from tasks.translation.deepl_client import ReplayTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.postedit import import_postedit
from tasks.translation.pretranslate import bbq_declarations, pretranslate
from tasks.translation.twin_templates import write_machine_translation
from tasks.translation.workbook import EXPORT, FOLLOWS, MANIFEST, export_postedit_workbooks
from tasks.templates.kobbq_format import expand_templates
from tasks.release.write import samples_frame
from core.tables import write_tsv_rows
from twin_convention import convention_breaks, people_words

EXAMPLE = PROJECT_ROOT / "templates_raw" / "example_ja"
RETURNED = EXAMPLE / "translation" / "returned"
ANNOTATORS = sorted((EXAMPLE / "labels" / "annotators").glob("*.xlsx"))
KEY = ["Category", "ID", "version"]
POSTEDIT_COLUMNS = ["Category", "ID", "version", "Label_annotation", "Stereotype", "Ambiguous_context",
                    "Disambiguating_context", "Names", "Lexical_diversity", "Biased_question",
                    "Counter-biased_question", "Biased_question_answer", "Counter-biased_question_answer",
                    "BBQ_id", "BBQ_category"]
GROUP_COLUMNS = ["N1_info", "N2_info", "Target_group", "Reference"]


@pytest.fixture(scope="module")
def ja():
    return load_profile("ja")


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def keyed(rows: list[dict[str, str]], columns: list[str]) -> dict[tuple[str, ...], dict[str, str]]:
    return {tuple(r[c] for c in KEY): {c: r[c] for c in columns} for r in rows}


def test_returned_workbooks_import_to_the_adapted_rows_and_groups_and_nc_complete_them(ja, tmp_path):
    example = read_tsv(EXAMPLE / "ja_example_templates.tsv")
    adapted = [r for r in example if r["Label_annotation"] in ("ST", "TM")]
    assert len(adapted) == 16  # Age 1-3, Religion 1-2, SES 1-3, versions a and b
    result = import_postedit(sorted(RETURNED.glob("*.xlsx")), ja, tmp_path / "postedit_templates.tsv",
                             profile_glossary(ja))
    assert not result.findings and result.tsv_path is not None
    assert keyed(read_tsv(result.tsv_path), POSTEDIT_COLUMNS) == keyed(adapted, POSTEDIT_COLUMNS)
    substitutions = [(d.subject, d.reason) for d in result.decisions if d.rule == "cultural-substitution"]
    assert substitutions == [("Age|2", "the post-edit adapts 1 US-specific term(s) to Japan: neighborhood association "
                                       "-> 町内会"),
                             ("SES|1", "the post-edit adapts 1 US-specific term(s) to Japan: parents' meeting -> 保護者会"),
                             ("SES|3", "the post-edit adapts 1 US-specific term(s) to Japan: wedding reception -> "
                                       "結婚披露宴")]
    with (EXAMPLE / "groups.csv").open(encoding="utf-8", newline="") as handle:
        assert keyed(list(csv.DictReader(handle)), GROUP_COLUMNS) == keyed(adapted, GROUP_COLUMNS)
    assert read_tsv(EXAMPLE / "newly_created.tsv") == [r for r in example if r["Label_annotation"] == "NC"]
    nc = import_newly_created(EXAMPLE / "newly_created.tsv", ja,
                              others=load_kobbq_templates(result.tsv_path, separators=ja.templates.separators).templates)
    assert sorted(d.subject for d in nc.decisions) == ["Age|4", "Domestic_area_of_origin|1"]


def test_returned_workbooks_are_the_export_of_the_labelled_templates_for_ja(ja, tmp_path):
    templates, findings = load_bbq_templates(EXAMPLE / "bbq")
    assert not findings and len({t.subject for t in templates}) == 12
    consensus = load_consensus(EXAMPLE / "labels" / "consensus.csv", templates, ja.labels.require_rationale)
    cache = tmp_path / "cache.sqlite"
    shutil.copy(EXAMPLE / "translation" / "translation_cache.sqlite", cache)
    drafts = pretranslate(templates_to_adapt(templates, consensus), ReplayTranslator(), cache, ja, profile_glossary(ja))
    assert drafts.complete and drafts.chars_billed == 0 and not drafts.flagged
    exported = export_postedit_workbooks(drafts.drafts, tmp_path / "out", ja,
                                         {s: f.label for s, f in consensus.labels.items()})
    assert [p.name for p in exported] == ["postedit_Age.xlsx", "postedit_Religion.xlsx", "postedit_SES.xlsx"]
    for path in exported:  # returned before the export had a Follows_version row: the import reads them as ever
        sent, returned = load_workbook(path), load_workbook(RETURNED / path.name)
        rows = [row for row in sent[MANIFEST].iter_rows(values_only=True) if row[5] != FOLLOWS]
        assert rows == list(returned[MANIFEST].iter_rows(values_only=True))
        assert list(returned[EXPORT].iter_rows(values_only=True)) == [("profile", "ja")]


def test_a_ja_workbook_is_refused_under_another_profile_naming_both(ja, tmp_path):
    with pytest.raises(UserError, match="exported for profile 'ja', and is imported under profile 'ko'"):
        import_postedit([RETURNED / "postedit_Age.xlsx"], load_profile("ko"), tmp_path / "x.tsv", profile_glossary(ja))
    _, items = load_label_items(EXAMPLE / "bbq", ja)
    with pytest.raises(FindingsError, match="exported for profile 'ja', and is imported under profile 'ko'"):
        import_annotations(ANNOTATORS, items, True, "ko")


def test_three_annotators_agree_as_worked_out_by_hand(ja):
    """Per template (ST, TM, SR): 8 unanimous, 4 split 2-1, so mean P_i = (8 + 4/3) / 12 = 7/9; label totals
    ST 15, TM 9, SR 12 of 36, so P_e = 450/1296; kappa = (7/9 - 450/1296) / (1 - 450/1296) = 558/846."""
    _, items = load_label_items(EXAMPLE / "bbq", ja)
    report = agreement(import_annotations(ANNOTATORS, items, True, "ja"), items)
    overall = report.rows[0]
    assert (overall.templates, overall.unanimous) == (12, 8)
    assert overall.kappa == pytest.approx(558 / 846)


def test_versions_the_wrong_way_round_stop_where_the_groups_meet_the_post_edit(ja, tmp_path):
    """A post-edit that kept BBQ's letters for Age 2 (its version a is the biased one), with a groups file that
    describes each row as it is: an error at each groups-file line, naming the template, the version and the fix."""
    postedit = [r for r in read_tsv(EXAMPLE / "ja_example_templates.tsv") if r["Label_annotation"] in ("ST", "TM")]
    swapped = {("Age", "2", "a"): "b", ("Age", "2", "b"): "a"}
    for row in postedit:
        row["version"] = swapped.get((row["Category"], row["ID"], row["version"]), row["version"])
    groups = tmp_path / "groups.csv"
    groups.write_text((EXAMPLE / "groups.csv").read_text(encoding="utf-8").replace("Age,2,a,", "Age,2,X,")
                      .replace("Age,2,b,", "Age,2,a,").replace("Age,2,X,", "Age,2,b,"), encoding="utf-8")
    rows, lines = merge_groups([{k: v for k, v in r.items() if k not in GROUP_COLUMNS} for r in postedit], groups)
    path = write_tsv_rows(tmp_path / "templates.tsv", list(rows[0]), rows)
    with pytest.raises(FindingsError) as raised:
        check_versions(load_kobbq_templates(path, separators=ja.templates.separators), lines, groups, ja)
    errors = raised.value.findings
    assert [(f.where.file, f.where.row, f.code) for f in errors] == [
        (str(groups), 4, "version-convention"), (str(groups), 5, "version-convention")]  # lines 4 (b) and 5 (a)
    assert errors[1].message.startswith("Age template 2 version a carries the biased disambiguating context")
    assert "Fix: exchange versions a and b of this template" in errors[1].message
    assert "exchange the Post-edit cells of the two rows, every field" in errors[1].message  # Names or texts alike
    right = write_tsv_rows(tmp_path / "right.tsv", list(rows[0]), merge_groups(
        [{k: v for k, v in r.items() if k not in GROUP_COLUMNS} for r in read_tsv(EXAMPLE / "ja_example_templates.tsv")
         if r["Label_annotation"] != "NC"], EXAMPLE / "groups.csv")[0])
    check_versions(load_kobbq_templates(right, separators=ja.templates.separators), lines, EXAMPLE / "groups.csv", ja)


def test_validation_checks_the_version_convention_in_a_template_file(ja, tmp_path):
    text = (EXAMPLE / "ja_example_templates.tsv").read_text(encoding="utf-8")
    path = tmp_path / "t.tsv"
    path.write_text(text.replace("SES\t2\ta\t", "SES\t2\tX\t").replace("SES\t2\tb\t", "SES\t2\ta\t")
                    .replace("SES\t2\tX\t", "SES\t2\tb\t"), encoding="utf-8")
    from tasks.templates.validate import validate_loaded

    found = [f for f in validate_loaded(load_templates(path, ja), ja) if f.code == "version-convention"]
    assert [(f.where.row, f.where.column) for f in found] == [(16, "version"), (17, "version")]
    assert not [f for f in validate_loaded(load_templates(EXAMPLE / "ja_example_templates.tsv", ja), ja)
                if f.code.startswith("version")]


def test_survey_reports_are_worded_for_a_culture_without_a_prior_release(ja):
    templates = load_templates(EXAMPLE / "ja_example_templates.tsv", ja).templates
    survey = EXAMPLE / "survey"
    stage = survey_stage(templates, SurveyInputs(survey / "responses.csv", survey / "reading_responses.csv",
                                                 questions=survey / "questions.csv"), ja)
    text = render_group_check(stage.outcome)
    assert "released" not in text.lower() and "survivors of the paper" not in text
    assert "this build's candidates for Japan" in text
    assert sorted(t.key for t in stage.outcome.templates if not t.keep) == [("Age", 4), ("Religion", 2), ("SES", 1)]


def copy_pipeline(tmp_path: Path) -> Path:
    """The example's pipeline with its own copy of the ja profile (by path), and no consensus yet."""
    shutil.copytree(PROJECT_ROOT / "core" / "profiles" / "ja", tmp_path / "profile" / "ja")
    text = (EXAMPLE / "pipeline.toml").read_text(encoding="utf-8")
    text = text.replace('profile = "ja"', 'profile = "profile/ja/ja.toml"').replace('consensus = "labels/consensus.csv"',
                                                                                 'consensus = "arrived/consensus.csv"')
    for folder in ("bbq", "labels", "translation", "survey"):
        text = text.replace(f'"{folder}', f'"{EXAMPLE / folder}')
    text = text.replace('"groups.csv"', f'"{EXAMPLE / "groups.csv"}"').replace('"newly_created.tsv"',
                                                                               f'"{EXAMPLE / "newly_created.tsv"}"')
    path = tmp_path / "pipeline.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_changed_profile_file_makes_the_stages_it_feeds_and_those_after_them_stale(tmp_path):
    ctx = context(load_pipeline(copy_pipeline(tmp_path)), tmp_path / "build")

    def fingerprints() -> dict[str, str]:
        return {check.stage.name: check.fingerprint for check in each_stage(ctx, STAGE_LIST)}

    stages = fingerprints()
    before = fingerprints()
    profile = tmp_path / "profile" / "ja"
    (profile / "postedit_instructions.txt").write_text("Post-edit the drafts.\n", encoding="utf-8")
    (profile / "survey" / "type2.j2").write_text("{{ groups[0] }}と{{ groups[1] }}：「{{ stereotype }}」\n",
                                                 encoding="utf-8")
    after = fingerprints()
    later = {"postedit", "templates", "survey-export", "survey", "release"}  # everything after the pre-translation
    assert {name for name in stages if before[name] != after[name]} == {"pretranslate", *later}
    assert before["labels"] == after["labels"]
    (profile / "glossary.csv").write_text("source,target,note\nWalmart,イオン,chain\n", encoding="utf-8")
    again = fingerprints()
    assert {name for name in stages if after[name] != again[name]} == {"pretranslate", *later}
    (profile / "survey" / "type2.j2").write_text("{{ groups[1] }}と{{ groups[0] }}：「{{ stereotype }}」\n", encoding="utf-8")
    assert {name for name, value in fingerprints().items() if value != again[name]} == {"survey-export", "survey",
                                                                                         "release"}


def test_the_labels_stage_hint_carries_the_profile_and_where_to_write(tmp_path):
    ctx: Context = context(load_pipeline(copy_pipeline(tmp_path)), tmp_path / "build")
    stage = STAGE_LIST[0]
    with pytest.raises(Waiting) as waiting:
        stage.run(ctx)
    profile = str(tmp_path / "profile" / "ja" / "ja.toml")
    assert f"`kobbq labels export --profile {profile} --bbq {EXAMPLE / 'bbq'} --annotator NAME --out " in str(waiting.value)
    assert f"`kobbq labels import --profile {profile} --bbq" in str(waiting.value)


def test_the_twin_holds_the_version_convention_on_every_sample(ja, tmp_path):
    """Four example templates have BBQ's version a as the biased one (Age 2, Age 4, Religion 1, SES 2): their twin
    exchanges the letters by BBQ's own answer info, so every biased answer names the right person, checked from
    the English BBQ files alone (tests/twin_convention.py)."""
    templates, _ = load_bbq_templates(EXAMPLE / "bbq")
    consensus = load_consensus(EXAMPLE / "labels" / "consensus.csv", templates, ja.labels.require_rationale)
    cache = tmp_path / "cache.sqlite"
    shutil.copy(EXAMPLE / "translation" / "translation_cache.sqlite", cache)
    glossary = profile_glossary(ja)
    drafts = pretranslate(templates_to_adapt(templates, consensus), ReplayTranslator(), cache, ja, glossary)
    labels = {s: f.label for s, f in consensus.labels.items()}
    machine = write_machine_translation(drafts.drafts, ja, labels, tmp_path / "mtBBQ_templates.tsv")
    assert not machine.errors
    fates = {d.subject: (d.outcome, d.numbers["bbq"]) for d in machine.decisions if d.rule == "mt-twin"}
    assert sorted(s for s, (outcome, _) in fates.items() if outcome == "versions exchanged") == [
        "Age|2", "Age|3", "Religion|1", "SES|2"]  # BBQ Age 2, Age 4, Religion 1, SES 2
    twin = load_kobbq_templates(machine.tsv_path, separators=ja.templates.separators).templates
    samples = samples_frame(expand_templates(twin, ja))
    words = people_words(EXAMPLE / "bbq", "JA", glossary.targets)
    adapted = templates_to_adapt(templates, consensus)  # 4 samples a fill, fills from BBQ's own lists
    assert len(samples) == sum(4 * math.prod(len(items) for _, items in bbq_declarations(t.names + "; " + t.lexical))
                               for t in adapted)
    assert convention_breaks(samples, words) == []
    inverted = samples_frame(expand_templates([replace(t, version={"a": "b", "b": "a"}[t.version]) for t in twin
                                               if t.template_key == ("Age", 2)], ja))
    assert len(convention_breaks(inverted, words)) == len(inverted) > 0  # BBQ's letters kept: every sample breaks
