"""Text hygiene (core/text.py) and slot lists, for every script: a character nobody sees is reported with its code
point where it is (file, row, column), whether it arrives in a template file, a post-edit workbook or a profile's
own text; a list item with a space, in a language written without spaces, is a warning, never one silent filler.

Texts are generated in several scripts with format (Cf), space (Zs) and control (Cc) characters inserted at random
places; the expected findings are worked out from the characters inserted, not by the code under test."""

from __future__ import annotations

import shutil
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from openpyxl import load_workbook

from core.errors import Location
from core.findings import FindingsError
from core.paths import EXAMPLE_DIR, EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.profile import WritingProfile, load_profile
from core.text import check_text, normalise_text
from kobbq.cli import main
from tasks.labels.consensus import load_consensus
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.load import load_kobbq_templates, read_tsv
from tasks.templates.slots import list_findings, split_items
from tasks.templates.templates_stage import read_groups
from tasks.templates.validate import validate_loaded
from tasks.translation.glossary import EMPTY_GLOSSARY
from tasks.translation.postedit import import_postedit, render_report

# Letters of scripts that write spaces between words and of some that do not (Thai, Lao, Han, kana).
SCRIPTS = {"Hangul": (0xAC00, 0xD7A3), "Han": (0x4E00, 0x9FFF), "Hiragana": (0x3041, 0x3096), "Thai": (0x0E01, 0x0E2E),
           "Lao": (0x0E81, 0x0EA3), "Arabic": (0x0628, 0x064A), "Devanagari": (0x0915, 0x0939),
           "Cyrillic": (0x0430, 0x044F), "Latin": (0x61, 0x7A)}
ODD = {"Cf": "error", "Zs": "warning", "Cc": "warning"}  # the category of an inserted character -> its severity
PLAIN = " \t\n\r"
SETTINGS = settings(max_examples=60, deadline=None)


def letters(script: str) -> st.SearchStrategy[str]:
    low, high = SCRIPTS[script]
    return st.text(st.characters(min_codepoint=low, max_codepoint=high, categories=["Lo", "Ll"]), min_size=1,
                   max_size=12)


def odd_characters() -> st.SearchStrategy[str]:
    return st.characters(categories=list(ODD), exclude_characters=PLAIN)


@st.composite
def texts_with_odd_characters(draw) -> tuple[str, list[str]]:
    """Words of one script with spaces between them, and odd characters inserted between or inside words."""
    words = draw(st.lists(letters(draw(st.sampled_from(sorted(SCRIPTS)))), min_size=1, max_size=6))
    text = " ".join(words)
    inserted = draw(st.lists(odd_characters(), min_size=1, max_size=4))
    for char in inserted:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + char + text[at:]
    return text, list(dict.fromkeys(inserted))


@SETTINGS
@given(texts_with_odd_characters())
def test_every_odd_character_is_reported_once_with_its_code_point(case):
    text, inserted = case
    where = Location("templates.tsv", 7, "Ambiguous_context")
    findings = check_text(text, where, "")
    in_order = [char for char in dict.fromkeys(text) if char in inserted]
    assert [f.where for f in findings] == [where] * len(inserted)
    for char, finding in zip(in_order, findings):
        assert f"U+{ord(char):04X}" in finding.message
        assert finding.severity == ODD[unicodedata.category(char)]
        name = unicodedata.name(char, "")
        assert name in finding.message


@SETTINGS
@given(texts_with_odd_characters(), st.characters(categories=["Cf", "Zs"], exclude_characters=PLAIN).filter(
    lambda char: unicodedata.normalize("NFC", char) == char))  # a profile may allow only what NFC writes
def test_what_the_profile_allows_passes_and_normalising_keeps_it(case, allowed):
    text, inserted = case
    text = f"{text}{allowed}x"
    findings = check_text(text, Location("x"), allowed)
    assert len(findings) == len(set(inserted) - {allowed}) and all(f"U+{ord(allowed):04X} " not in f.message
                                                                     for f in findings)
    normalised, _ = normalise_text(text, allowed)
    assert allowed in normalised  # kept where it is written
    others = {c for c in inserted if unicodedata.category(c) != "Cf"} - {allowed}
    assert not others & set(normalised)  # every other control and space is a plain space now


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 13), st.sampled_from(["Stereotype", "Ambiguous_context", "Names", "Biased_question"]),
       odd_characters())
def test_validate_names_the_cell_of_an_odd_character_in_a_template_file(ko_profile, row_index, column, char):
    """The loader of every TSV (templates, newly-created, the post-edit's check) reports it, and so `validate`."""
    header, rows, numbers = read_tsv(EXAMPLE_TEMPLATES)
    assert len(rows) == 14
    text = rows[row_index][column]
    rows[row_index][column] = text[:3] + char + text[3:]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "templates.tsv"
        path.write_text("\t".join(header) + "\n" + "".join("\t".join(r[h] for h in header) + "\n" for r in rows),
                        encoding="utf-8")
        findings = validate_loaded(load_kobbq_templates(path), ko_profile)
    found = [f for f in findings if f"U+{ord(char):04X}" in f.message]
    assert [(f.where.row, f.where.column, f.severity) for f in found] == [
        (numbers[row_index], column, ODD[unicodedata.category(char)])]


def test_validate_prints_the_zero_width_space_it_used_to_pass(tmp_path, capsys):
    text = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").replace("할머니", "할\u200b머니", 1)
    (tmp_path / "t.tsv").write_text(text, encoding="utf-8")
    assert main(["validate", "--profile", "ko", str(tmp_path / "t.tsv")]) == 1
    out = capsys.readouterr().out
    assert "contains U+200B ZERO WIDTH SPACE, an invisible format character" in out and "1 error(s)" in out


@pytest.fixture()
def returned(tmp_path) -> Path:
    return Path(shutil.copy(EXAMPLE_DIR / "translation" / "returned" / "postedit_Age.xlsx", tmp_path))


def test_a_post_edit_cell_with_a_zero_width_space_is_refused_at_its_cell(returned, tmp_path):
    book = load_workbook(returned)
    cell = book["templates"].cell(3, 9)
    cell.value = cell.value[:4] + "\u200b" + cell.value[4:]
    book.save(returned)
    out = tmp_path / "p.tsv"
    result = import_postedit([returned], load_profile("ko"), out, EMPTY_GLOSSARY)
    assert not out.exists()
    assert [(f.where.row, f.where.column, f.code) for f in result.errors] == [(3, "Post-edit", "format-character")]
    assert "U+200B ZERO WIDTH SPACE" in result.errors[0].message


def test_a_no_break_space_becomes_a_plain_space_and_the_report_says_so(returned, tmp_path):
    book = load_workbook(returned)
    cell = book["templates"].cell(3, 9)
    cell.value = cell.value.replace(" ", "\u00a0", 1)
    book.save(returned)
    result = import_postedit([returned], load_profile("ko"), tmp_path / "p.tsv", EMPTY_GLOSSARY)
    assert not result.errors and "\u00a0" not in (tmp_path / "p.tsv").read_text(encoding="utf-8")
    [warning] = [f for f in result.findings if f.code == "space-character"]
    assert (warning.where.row, "U+00A0 NO-BREAK SPACE" in warning.message) == (3, True)
    assert "## Warnings" in render_report(result) and "U+00A0 NO-BREAK SPACE" in render_report(result)


# --- slot lists -------------------------------------------------------------------------------------------

def no_space_profile(ko):
    """A profile of a language written without spaces between words (Thai's rule), from the ko profile."""
    return ko.model_copy(update={"writing": WritingProfile(scripts=["Thai"], spaces_between_words=False)})


@SETTINGS
@given(st.lists(st.lists(letters("Thai"), min_size=1, max_size=3), min_size=1, max_size=4))
def test_an_item_with_a_space_is_a_warning_in_a_language_without_spaces(ko_profile, groups):
    """Each inner list is one item's words: an item of several words was written with spaces between them (the Thai
    "[หลานชาย หลานสาว]"); the warnings name exactly those items, and the list is split at its commas only."""
    items = [" ".join(words) for words in groups]
    body = ", ".join(items)
    parsed = split_items(body, (",",))
    assert list(parsed) == items
    warned = [f for f in list_findings(Location("t.tsv", 2, "Names"), "N1", parsed, no_space_profile(ko_profile))
              if f.code == "slot-item-space"]
    assert [f.message.split("'")[1] for f in warned] == [item for item in items if " " in item]
    assert not list_findings(Location("t.tsv", 2, "Names"), "N1", parsed, ko_profile)  # Korean has spaces


@SETTINGS
@given(st.lists(letters("Han"), min_size=2, max_size=4), st.sampled_from(["、", "，", "،", "፣", ";", "；"]))
def test_a_separator_the_profile_does_not_accept_is_an_error_in_any_script(ko_profile, items, separator):
    """Unicode's list punctuation of any script, inside what the profile reads as one item (ko accepts ',')."""
    findings = list_findings(Location("t.tsv", 2, "Names"), "N1", (separator.join(items),), ko_profile)
    assert [(f.severity, f.code) for f in findings] == [("error", "slot-separator")]
    assert repr(separator) in findings[0].message


def test_a_profile_allows_format_characters_and_spaces_by_code_point_and_nothing_else():
    persian = WritingProfile(scripts=["Arabic"], allowed_characters=["U+200C", "U+202F"])
    assert persian.allowed == "\u200c\u202f"
    assert check_text("می\u200cخواهم", Location("x"), persian.allowed) == []
    for wrong in (["U+0041"], ["U+0008"], ["200C"]):  # a letter, a control, no "U+"
        with pytest.raises(ValueError):
            WritingProfile(scripts=["Arabic"], allowed_characters=wrong)


def test_an_allowed_character_that_nfc_rewrites_is_refused() -> None:
    from core.profile import WritingProfile

    with pytest.raises(ValueError, match=r"U\+2000 \(NFC writes U\+2002\)"):
        WritingProfile(scripts=["Latin"], allowed_characters=["U+2000"])


# --- the groups file and the profile's own words ----------------------------------------------------------

QA, KA_NUKTA = "\u0958", "\u0915\u093c"  # DEVANAGARI LETTER QA as a Hindi keyboard types it, and its NFC


def groups_file(tmp_path: Path, target: str) -> Path:
    """The Japanese example's groups file, Age 1's target group as ``target``."""
    text = (PROJECT_ROOT / "templates_raw" / "example_ja" / "groups.csv").read_text(encoding="utf-8")
    path = tmp_path / "groups.csv"
    path.write_text(text.replace("Age,1,a,若者,高齢者,高齢者", f"Age,1,a,若者,高齢者,{target}", 1), encoding="utf-8")
    return path


def test_a_groups_cell_is_nfc_with_plain_spaces_as_the_post_edit_is(tmp_path, capsys):
    """A group typed with U+0958 and a NO-BREAK SPACE used to reach the merged template file as typed, which the
    templates stage then refused at its own cells (a file nobody edits): it is merged in NFC with a plain space, and
    the odd space is a warning at the groups file's cell."""
    rows = dict(read_groups(groups_file(tmp_path, f"{QA}ह\u00a0{QA}"), ""))
    assert rows[2]["Target_group"] == f"{KA_NUKTA}ह {KA_NUKTA}"
    assert f"{tmp_path / 'groups.csv'}, row 2, column Target_group: contains U+00A0 NO-BREAK SPACE" in \
        capsys.readouterr().err


def test_a_format_character_in_a_groups_cell_is_refused_there(tmp_path):
    with pytest.raises(FindingsError) as error:
        read_groups(groups_file(tmp_path, "高齢\u200b者"), "")
    assert "row 2, column Target_group: contains U+200B ZERO WIDTH SPACE" in error.value.render()


def test_a_profiles_words_are_read_in_nfc_and_its_file_names_as_written(tmp_path):
    """The culture's name and unknown option typed with U+0958 reach the card and every sample: read in NFC, the
    form of every other text of the release."""
    ja = (PROJECT_ROOT / "core" / "profiles" / "ja" / "ja.toml").read_text(encoding="utf-8")
    (tmp_path / "xx").mkdir()
    (tmp_path / "xx" / "xx.toml").write_text(
        ja.replace('name = "ja"', 'name = "xx"', 1).replace('name = "Japan"', f'name = "{QA}"', 1)
        .replace('unknown_expression = "判断できない"', f'unknown_expression = "{QA}ह"', 1)
        .replace("[card]", f'[files]\nglossary = "{QA}.csv"\n\n[card]', 1), encoding="utf-8")
    profile = load_profile(str(tmp_path / "xx" / "xx.toml"))
    assert (profile.culture.name, profile.release.unknown_expression) == (KA_NUKTA, f"{KA_NUKTA}ह")
    assert profile.files.glossary == f"{QA}.csv"


def test_a_consensus_rationale_is_released_in_nfc(tmp_path):
    """A rationale typed with U+0958 is the reason of its label decision (decisions.csv of the release) in NFC."""
    example = PROJECT_ROOT / "templates_raw" / "example_ja"
    text = (example / "labels" / "consensus.csv").read_text(encoding="utf-8")
    (tmp_path / "consensus.csv").write_text(text.replace("全員一致でST（3人中3人）", f"{QA}\u00a0ST", 1), encoding="utf-8")
    consensus = load_consensus(tmp_path / "consensus.csv", load_bbq_templates(example / "bbq")[0], True)
    [reason] = [d.reason for d in consensus.decisions if d.subject == "bbq:Age:1" and d.rule == "consensus-label"]
    assert reason.endswith(f": {KA_NUKTA} ST.")
