"""The post-edit round trip: export workbooks, read the returned ones, write KoBBQ-format rows."""

from __future__ import annotations

import shutil
import time
import unicodedata
from pathlib import Path

import pytest
from openpyxl import load_workbook

from core.errors import Location, UserError
from core.profile import load_profile
from core.paths import EXAMPLE_DIR
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.load import load_kobbq_templates
from tasks.translation.deepl_client import ReplayTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.postedit import edit_rates, import_postedit, render_report
from tasks.translation.twin_templates import write_machine_translation
from tasks.translation.pretranslate import pretranslate
from tasks.translation.workbook import FOLLOWS, HEADER, EditedCell, ExportRow, export_postedit_workbooks

EXAMPLE = EXAMPLE_DIR / "translation"
RETURNED = EXAMPLE / "returned"
LABELS = {"bbq:Age:1": "ST", "bbq:Age:2": "ST", "bbq:Gender_identity:1": "ST"}


@pytest.fixture(scope="module")
def drafts(ko_profile, tmp_path_factory):
    """The example drafts replayed from the recorded cache (no network, nothing billed)."""
    templates, _ = load_bbq_templates(EXAMPLE)
    cache = tmp_path_factory.mktemp("cache") / "c.sqlite"
    shutil.copy(EXAMPLE / "translation_cache.sqlite", cache)
    result = pretranslate(templates, ReplayTranslator(), cache, ko_profile, profile_glossary(load_profile("ko")))
    assert result.complete and result.chars_billed == 0
    return result.drafts


@pytest.fixture()
def returned(tmp_path) -> list[Path]:
    paths = []
    for path in sorted(RETURNED.glob("*.xlsx")):
        paths.append(Path(shutil.copy(path, tmp_path / path.name)))
    return paths


def test_edit_rate_counts_characters_inserted_deleted_or_substituted():
    def cell(template_id: int, draft: str, postedit: str) -> EditedCell:
        row = ExportRow("Age", template_id, "a", "Age", "1", "ST", "ambiguous_context", "", draft)
        return EditedCell("Age", row, postedit, "", Location("postedit_Age.xlsx", 2, "Post-edit"))

    templates, categories = edit_rates([cell(1, "kitten", "sitting"), cell(2, "노인이 왔다", "노인은 왔다"),
                                        cell(2, "", "abc")])
    assert [(r.subject, r.changed, r.draft_characters) for r in templates] == [("Age|1", 3, 6), ("Age|2", 4, 6)]
    assert [(r.subject, r.changed, r.draft_characters) for r in categories] == [("Age", 7, 12)]


def test_export_locks_sources_and_keeps_formula_like_text_as_text(drafts, ko_profile, tmp_path):
    paths = export_postedit_workbooks(drafts, tmp_path, ko_profile, LABELS)
    assert [p.name for p in paths] == ["postedit_Age.xlsx", "postedit_Gender_identity.xlsx"]
    workbook = load_workbook(paths[1])
    assert workbook.sheetnames[0] == "Instructions" and workbook["_manifest"].sheet_state == "hidden"
    sheet = workbook["templates"]
    assert [c.value for c in sheet[1]] == HEADER and sheet.protection.sheet
    stereotype = next(r for r in sheet.iter_rows(min_row=2) if r[5].value == "Stereotype")
    assert stereotype[6].value == "-Women are secretaries" and stereotype[6].data_type == "s"
    assert stereotype[6].protection.locked and not stereotype[8].protection.locked
    assert stereotype[8].value == stereotype[7].value  # post-edit pre-filled with the draft
    # 2 rows x (9 fields + the English version the row follows) for the one gender template
    assert sheet.max_row - 1 == 2 * 10
    follows = [(r[1].value, r[6].value, r[8].value) for r in sheet.iter_rows(min_row=2) if r[5].value == FOLLOWS]
    assert follows == [("a", "a", "a"), ("b", "b", "b")]


def test_exporting_the_same_drafts_twice_gives_the_same_bytes(drafts, ko_profile, tmp_path):
    """The pipeline fingerprints the exported folder: a re-run must not look like a change.

    openpyxl stamps docProps/core.xml and every zip entry with the time of saving (zip times
    have a 2-second resolution), so the second export waits past that.
    """
    first = export_postedit_workbooks(drafts, tmp_path / "first", ko_profile, LABELS)
    time.sleep(2.1)
    second = export_postedit_workbooks(drafts, tmp_path / "second", ko_profile, LABELS)
    assert [p.name for p in first] == [p.name for p in second] == ["postedit_Age.xlsx", "postedit_Gender_identity.xlsx"]
    for one, two in zip(first, second):
        assert one.read_bytes() == two.read_bytes(), one.name
    assert sorted(p.name for p in (tmp_path / "first").iterdir()) == [p.name for p in first]  # no temp file left


def test_import_writes_kobbq_rows_with_inflected_particles(returned, ko_profile, tmp_path):
    result = import_postedit(returned, ko_profile, tmp_path / "postedit.tsv", profile_glossary(load_profile("ko")))
    assert not result.errors, [f.render() for f in result.errors]
    loaded = load_kobbq_templates(result.tsv_path)
    assert not loaded.findings and len(loaded.templates) == 6
    age1 = next(t for t in loaded.templates if t.key == "Age|1|a")
    # 손자/손녀 end in a vowel: 와; 할아버지/할머니 too: 가. The translator wrote [N1]과 [N2]가.
    assert "[N1: 손자와, 손녀와] [N2: 할아버지가, 할머니가]" in age1.texts["ambiguous_context"]
    assert age1.bbq_category == "Age" and age1.bbq_id == "1" and age1.label == "ST"
    gender = next(t for t in loaded.templates if t.key == "Gender_identity|1|b")
    assert gender.texts["disambiguating_context"].startswith("[N2: 여성은, 소녀는]")  # 여성 ends in ㅇ
    assert ("Age|1", "Walmart", "이마트") in result.substitutions
    assert all(0 < r.rate <= 1.5 for r in result.template_rates)
    assert {d.rule for d in result.decisions} == {"postedit-import", "cultural-substitution"}


def test_unicode_is_normalised_to_nfc(returned, ko_profile, tmp_path):
    workbook = load_workbook(returned[0])
    sheet = workbook["templates"]
    sheet.cell(2, 9).value = unicodedata.normalize("NFD", "기술 사용에 서투름")
    workbook.save(returned[0])
    result = import_postedit(returned, ko_profile, tmp_path / "p.tsv", profile_glossary(load_profile("ko")))
    assert result.rows[0]["Stereotype"] == "기술 사용에 서투름"
    assert unicodedata.is_normalized("NFC", result.tsv_path.read_text(encoding="utf-8"))


def test_problems_are_reported_at_their_cell_and_nothing_is_written(returned, ko_profile, tmp_path):
    workbook = load_workbook(returned[0])
    sheet = workbook["templates"]
    row = next(r for r in sheet.iter_rows(min_row=2) if r[5].value == "Disambiguating_context")
    row[8].value = row[8].value.replace("[N2]", "[N3]")
    question = next(r for r in sheet.iter_rows(min_row=2) if r[5].value == "Biased_question_answer")
    question[8].value = "아무도 아님"
    names = next(r for r in sheet.iter_rows(min_row=2) if r[5].value == "Names" and r[1].value == "b")
    names[8].value = "N1: [할아버지, 할머니; N2: [손자]"
    workbook.save(returned[0])
    out = tmp_path / "p.tsv"
    result = import_postedit(returned, ko_profile, out, profile_glossary(load_profile("ko")))
    assert not out.exists() and result.tsv_path is None
    where = {(f.where.sheet, f.where.row, f.where.column, f.code) for f in result.errors}
    assert ("templates", row[8].row, "Post-edit", "slot-undeclared") in where
    assert ("templates", names[8].row, "Post-edit", "bad-declaration") in where
    assert ("templates", question[8].row, "Post-edit", "slot-missing") in where


def test_changed_ids_columns_and_macro_workbooks_are_refused(returned, ko_profile, tmp_path):
    xlsm = tmp_path / "postedit_Age.xlsm"
    shutil.copy(returned[0], xlsm)
    with pytest.raises(UserError, match="xlsm"):
        import_postedit([xlsm], ko_profile, tmp_path / "p.tsv", profile_glossary(load_profile("ko")))
    workbook = load_workbook(returned[0])
    workbook["templates"].cell(3, 1).value = 99
    workbook.save(returned[0])
    with pytest.raises(UserError, match="row 3, column ID: locked cell changed"):
        import_postedit(returned, ko_profile, tmp_path / "p.tsv", profile_glossary(load_profile("ko")))
    workbook = load_workbook(returned[1])
    workbook["templates"].cell(1, 8).value = "Draft"
    workbook.save(returned[1])
    with pytest.raises(UserError, match="columns were changed"):
        import_postedit(returned[1:], ko_profile, tmp_path / "p.tsv", profile_glossary(load_profile("ko")))


def test_machine_translation_twin_is_right_or_absent(drafts, ko_profile, tmp_path):
    """The twin's roles are BBQ's own answer info's: Age 1 follows the convention and is kept, with BBQ's groups on
    its rows; Age 2 and Gender_identity 1 of this example answer their negative question with the stereotyped
    person in both versions, which no exchange of letters mends, so they are left out, each with its reason."""
    result = write_machine_translation(drafts, ko_profile, LABELS, tmp_path / "mtBBQ_templates.tsv")
    assert not result.errors, [f.render() for f in result.errors]
    loaded = load_kobbq_templates(result.tsv_path)
    assert [t.key for t in loaded.templates] == ["Age|1|a", "Age|1|b"] and not loaded.findings
    assert all("[N1:" in t.texts["ambiguous_context"] for t in loaded.templates)
    assert [(t.columns["N1_info"], t.columns["N2_info"], t.target_group) for t in loaded.templates] == [
        ("nonOld", "old", "old"), ("old", "nonOld", "old")]
    fates = {d.subject: (d.outcome, d.reason) for d in result.decisions if d.rule == "mt-twin"}
    assert fates["Age|1"][0] == "kept" and "BBQ a is counter-biased; BBQ b is biased" in fates["Age|1"][1]
    assert fates["Age|2"][0] == fates["Gender_identity|1"][0] == "left out"
    assert "no exchange of letters puts in the convention" in fates["Gender_identity|1"][1]


@pytest.mark.realdata
def test_single_version_bbq_templates_get_a_swapped_b_version(bbq_templates_dir, ko_profile, tmp_path):
    """BBQ's Religion file has no version column (one row per template): the export adds version b,
    the post-edit of both imports as a valid a/b pair instead of failing as unpaired."""
    import re

    from fake_deepl import FAKE_KEY, FakeDeepLServer

    from tasks.translation.deepl_client import DeepLTranslator

    templates, _ = load_bbq_templates(bbq_templates_dir / "new_templates - Religion.csv")
    assert len(templates) == len({t.q_id for t in templates}) == 25 and {t.version for t in templates} == {""}
    fake = FakeDeepLServer().start()
    try:
        drafted = pretranslate(templates, DeepLTranslator(FAKE_KEY, fake.url), tmp_path / "c.sqlite", ko_profile,
                               profile_glossary(load_profile("ko")))
    finally:
        fake.stop()
    assert drafted.complete
    [path] = export_postedit_workbooks(drafted.drafts, tmp_path / "out", ko_profile,
                                       {t.subject: "TM" for t in templates})
    workbook = load_workbook(path)
    sheet = workbook["templates"]
    rows = {(r[3].value, r[1].value, r[5].value): r for r in sheet.iter_rows(min_row=2)}
    assert sheet.max_row - 1 == 25 * 2 * 10  # 25 templates, versions a and b, 9 fields and Follows_version
    assert all(rows[(t.q_id, v, FOLLOWS)][8].value == v for t in templates for v in "ab")  # b's names b, not a

    def swap(text: str, one: str, two: str) -> str:
        return text.replace(one, "\0").replace(two, one).replace("\0", two)

    def kobbq_slots(bbq_text: str) -> str:  # BBQ's {{NAME1}}/{{{NAME2}}/{{WORD1}} as the workbook shows them
        return re.sub(r"\{\{\{?(NAME|WORD)(\d)\}\}\}?", lambda m: f"[{m.group(1)[0]}{m.group(2)}]", bbq_text)

    for t in templates:
        for field, text in (("Disambiguating_context", t.texts["disambiguating_context"]),
                            ("Biased_question_answer", t.texts["negative_answer"])):
            a, b = rows[(t.q_id, "a", field)], rows[(t.q_id, "b", field)]
            assert a[6].value == kobbq_slots(text)
            assert b[6].value == kobbq_slots(swap(text.replace("{{{", "{{"), "{{NAME1}}", "{{NAME2}}"))
            assert b[7].value == swap(a[7].value, "[N1]", "[N2]") and b[8].value == b[7].value
        assert rows[(t.q_id, "b", "Names")][6].value == rows[(t.q_id, "a", "Names")][6].value

    # The translator writes the people (BBQ takes them from its vocabulary) and keeps the drafts.
    for (_, _, field), row in rows.items():
        if field == "Names":
            row[8].value = "N1: [기독교인, 불교인]; N2: [이슬람교도]"
    workbook.save(path)
    result = import_postedit([path], ko_profile, tmp_path / "postedit.tsv", profile_glossary(load_profile("ko")))
    assert not result.errors, [f.render() for f in result.errors[:5]]
    loaded = load_kobbq_templates(result.tsv_path)
    versions: dict[str, set[str]] = {}
    for template in loaded.templates:
        versions.setdefault(template.bbq_id, set()).add(template.version)
    assert versions == {t.q_id: {"a", "b"} for t in templates}


def test_swapping_person_slots_leaves_other_slots_alone():
    from tasks.translation.workbook import swap_person_slots

    assert swap_person_slots("[N1: 손자와, 손녀와] [N2]가 [W1]에서 [N12] [N1]") == "[N2: 손자와, 손녀와] [N1]가 [W1]에서 [N12] [N2]"


def test_drafts_that_differ_from_the_current_pre_translation_are_a_warning_in_the_report(returned, ko_profile,
                                                                                          tmp_path):
    """The pre-translation was run again (a new glossary) after the workbook went out: its edit rates measure the
    post-edit against the drafts it holds, and the import says so, once per workbook, instead of nothing."""
    sent = tmp_path / "sent"
    sent.mkdir()
    workbook = load_workbook(returned[0])
    for sheet, column in (("templates", 8), ("_manifest", 8)):
        workbook[sheet].cell(3, column).value = "다시 번역한 초벌"
        workbook[sheet].cell(5, column).value = "또 다른 초벌"
    workbook.save(sent / returned[0].name)
    result = import_postedit(returned, ko_profile, tmp_path / "p.tsv", profile_glossary(load_profile("ko")), sent)
    assert not result.errors
    [stale] = [f for f in result.findings if f.code == "stale-drafts"]
    assert (stale.severity, stale.where.file, stale.where.row, stale.where.column) == (
        "warning", str(returned[0]), 3, "DeepL draft")
    assert stale.message.startswith("2 DeepL draft(s) of this workbook differ from the current pre-translation's")
    assert f"- {stale.render()}" in render_report(result)
    same = import_postedit(returned, ko_profile, tmp_path / "q.tsv", profile_glossary(load_profile("ko")), RETURNED)
    assert not same.findings and "## Warnings" not in render_report(same)
