"""The language-specific pieces as profile data, each rule on its own: nothing Korean in the generic path.

Each test is one of the defects a researcher met adapting the benchmark to Japanese (issue 22): the
contexts joined with a space, a slot list in the Japanese comma read as one filler, answers scored
out-of-choice because the parser knew only Korean markers, the Korean translator instructions, reasons
naming Korea, a Table 1 claiming agreement with no paper, a profile name taken for a folder.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.pipeline_file import load_pipeline
from core.profile import load_profile
from tasks.evaluation.parse import answer_forms, paper_parser, strict_parser
from tasks.templates.kobbq_format import expand_templates
from tasks.release.table1 import build_table1, render_csv, render_markdown
from tasks.survey.rules import survey_type
from tasks.templates.load import load_kobbq_templates
from tasks.templates.slots import foreign_separators, parse_declarations, split_items
from tasks.templates.validate import load_templates, validate_loaded
from tasks.translation.particles import Shorthand, expand_shorthand
from tasks.labels.annotations import guide_rows
from tasks.translation.workbook import FOLLOWS, instruction_lines

JA_EXAMPLE = PROJECT_ROOT / "templates_raw" / "example_ja"
HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


@pytest.fixture(scope="module")
def ja():
    return load_profile("ja")


@pytest.fixture(scope="module")
def ko():
    return load_profile("ko")


# --- how the two contexts join ------------------------------------------------------------------

def test_japanese_contexts_join_with_nothing_and_korean_with_one_space(ja, ko):
    japanese = expand_templates(load_templates(JA_EXAMPLE / "ja_example_templates.tsv", ja).templates[:1], ja)
    amb, dis = japanese.columns["context"][0], japanese.columns["context"][2]
    assert dis.startswith(amb) and dis[len(amb)] != " " and "。 " not in dis
    assert dis == amb + "高校生は何度も違うボタンを押してしまい駅員に助けを求めましたが、高齢の男性は数秒で切符を買うことができました。"
    korean = expand_templates(load_kobbq_templates(EXAMPLE_TEMPLATES).templates[:1], ko)
    amb, dis = korean.columns["context"][0], korean.columns["context"][2]
    assert dis.startswith(amb + " ") and dis[len(amb) + 1] != " "


# --- slot-list separators -------------------------------------------------------------------------

def test_a_list_splits_at_the_profiles_separators_only():
    assert split_items("孫息子、孫娘", ("、", ",")) == ("孫息子", "孫娘")
    assert split_items("孫息子, 孫娘", ("、", ",")) == ("孫息子", "孫娘")
    assert split_items("孫息子、孫娘") == ("孫息子、孫娘",)  # the default accepts "," only ...
    assert foreign_separators(("孫息子、孫娘",), (",",)) == ["、"]  # ... and says what it saw
    assert foreign_separators(("중동·북아프리카인", "ジョン・スミス"), (",",)) == []  # middle dots join names
    assert parse_declarations("N1: [孫息子、孫娘]; N2: [祖父]", ("、",)) == {"N1": ("孫息子", "孫娘"), "N2": ("祖父",)}


def test_a_separator_the_profile_does_not_accept_is_a_located_error(ko, tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text(EXAMPLE_TEMPLATES.read_text(encoding="utf-8").replace("[대학생, 고등학생]", "[대학생，고등학생]", 1),
                    encoding="utf-8")
    findings = [f for f in validate_loaded(load_templates(path, ko), ko) if f.code == "slot-separator"]
    assert findings and findings[0].severity == "error"
    assert (findings[0].where.row, findings[0].where.column) == (2, "Names")
    assert "'，'" in findings[0].message and "profile 'ko'" in findings[0].message


def test_the_shorthand_writes_the_profiles_separator_and_keeps_japanese_particles_outside(ja, ko):
    slots = {"N1": ("高校生", "大学生")}
    assert expand_shorthand("[N1]は駅で", slots, Shorthand.of(ja)).text == "[N1: 高校生、大学生]は駅で"
    assert expand_shorthand("[N1]은", {"N1": ("손자", "손녀")}, Shorthand.of(ko)).text == "[N1: 손자는, 손녀는]"


# --- the answer parser's markers and sentence forms -----------------------------------------------

CHOICES_JA = {"A": "高校生", "B": "判断できない", "C": "高齢の男性"}


@pytest.mark.parametrize("raw, expected", [
    ("答え：A", "A"), ("答えはAです。", "A"), ("A", "A"), ("(A)", "A"), ("（Ａ）", "A"), ("Ａ", "A"),
    ("答え: C", "C"), ("回答：B", "B"), ("正解はCです。理由は文脈にあります。", "C"),
    ("高齢の男性です。", "C"), ("答えは「高校生」です。", "A"), ("判断できません。", "B"),
    ("AとCのどちらとも言えない", "AとCのどちらとも言えない"),  # two letters: out-of-choice, verbatim
])
def test_japanese_answers_are_read_with_the_ja_profiles_forms(ja, raw, expected):
    assert paper_parser(raw, CHOICES_JA, answer_forms(ja.evaluation)) == expected


def test_without_the_ja_forms_the_same_answers_are_out_of_choice(ko):
    """The defect: the Korean cascade read "答え：A" and "答えはAです。" as out-of-choice."""
    forms = answer_forms(ko.evaluation)
    assert paper_parser("答え：A", CHOICES_JA, forms) == "答え：A"
    assert paper_parser("答えはAです。", CHOICES_JA, forms) == "答えはAです。"


def test_the_strict_parser_reads_full_width_letters_under_nfkc(ja):
    assert strict_parser("Ａ", CHOICES_JA, answer_forms(ja.evaluation)) == "A"


# The paper's cascade as the official post-processing script wrote it (before the patterns became profile data).
_FIRST_LINE = re.compile(r"^\s*\(?(?P<line>[^.\n]*)")
_RETRY = (re.compile(r"\*\*['\"]?(?P<text>[^.\n*'\"]*)"), re.compile(r"답변?[은:]\s*['\"]?(?P<text>[^.\n*'\"]*)"),
          re.compile(r"['\"](?P<text>[^.\n*'\"]*)"))
_AFTER = re.compile(r"[:)]\s*(?P<rest>.*)")


def official_cascade(raw: str, choices: dict[str, str]) -> str:
    line = _FIRST_LINE.match(raw)["line"].replace("없습니다", "없음").replace("입니다", "")
    upper = line.upper()
    if upper and upper[0] in choices:
        letter = upper[0]
        found = _AFTER.search(upper)
        rest = found["rest"].strip() if found else ""
        if rest:
            if choices[letter] == rest.lower():
                return letter
            if sum(upper.count(text.upper()) for text in choices.values()) > 1:
                return line
            return letter
        if sum(upper.count(candidate) for candidate in choices) == 1:
            return letter
    texts = list(choices.values())
    if line.lower() in texts:
        return list(choices)[texts.index(line.lower())]
    for pattern in _RETRY:
        found = pattern.search(raw)
        if found:
            return official_cascade(found["text"], choices)
    labelled = [letter for letter in choices if re.search(re.escape(letter) + r"[:)]", raw.upper())]
    return labelled[0] if len(labelled) == 1 else raw


def test_the_ko_profiles_cascade_is_the_official_one_on_random_answers(ko):
    tokens = ["답", "답은", "답:", "답변", "답변은", "답변:", "은", ":", ")", "(", "A", "B", "C", "b", ".", "\n", "**",
              "'", '"', " ", "입니다", "없습니다", "고등학생", "알 수 없음", "할아버지", "이유", "정답", "Answer"]
    choices = {"A": "고등학생", "B": "알 수 없음", "C": "할아버지"}
    forms, rng = answer_forms(ko.evaluation), random.Random(22)
    answers = ["".join(rng.choice(tokens) for _ in range(rng.randrange(12))) for _ in range(6000)]
    differing = [a for a in answers if paper_parser(a, choices, forms) != official_cascade(a, {k: v.lower()
                                                                                           for k, v in choices.items()})]
    assert not differing[:5]
    assert sum(paper_parser(a, choices, forms) in "ABC" for a in answers) > 1000  # the sample reaches every rule


# --- translator instructions ----------------------------------------------------------------------

def test_a_profile_without_instructions_gets_a_neutral_english_text_with_its_culture(ja, tmp_path):
    folder = tmp_path / "xx"
    shutil.copytree(PROJECT_ROOT / "core" / "profiles" / "ja", folder)
    (folder / "postedit_instructions.txt").unlink()
    (folder / "ja.toml").rename(folder / "xx.toml")
    lines = instruction_lines(load_profile(folder / "xx.toml"))
    text = "\n".join(lines)
    assert not HANGUL.search(text) and "Korea" not in text
    assert "familiar in Japan" in text and "'、'" in text
    assert any(line.startswith("Versions (a/b, c/d). Versions a, c carry the counter-biased") for line in lines)


def test_a_profiles_own_instructions_are_the_whole_sheet_never_half_english(ko, ja):
    """The ko and ja sheets are their own files, whole: no English sentence is appended, and each states the version
    convention and the Follows_version row that marks an exchange in the translator's language."""
    for profile in (ko, ja):
        lines = instruction_lines(profile)
        assert lines == profile.file("postedit_instructions").read_text(encoding="utf-8").splitlines()
        assert not any(line.startswith(("Versions (", "Cells to fill")) for line in lines)
        assert sum(FOLLOWS in line for line in lines) == 2
    assert any("편견에 반하는" in line for line in instruction_lines(ko))


def test_the_labelling_guide_is_the_profiles_own_else_english(ja, tmp_path):
    """The guide sheet of the labelling workbook: the ja profile's, in Japanese; a profile without its own file gets
    the English one, with the labels' meanings and the annotator."""
    own = guide_rows(ja, "sato")
    assert own[0] == ["「labels」シートのBBQテンプレートごとにラベルを選び、その理由を書いてください。"]
    assert [row[0] for row in own[2:]] == ["ST", "TM", "SR"] and not re.search("[a-z]{4}", own[2][1].split("（")[0])
    folder = tmp_path / "xx"
    shutil.copytree(PROJECT_ROOT / "core" / "profiles" / "ja", folder)
    (folder / "labelling_guide.txt").unlink()
    (folder / "ja.toml").rename(folder / "xx.toml")
    english = guide_rows(load_profile(folder / "xx.toml"), "sato")
    assert english[0][0].startswith("Label each BBQ template") and english[-1] == ["annotator", "sato"]


# --- sentences that name the culture --------------------------------------------------------------

def test_reasons_name_the_profiles_culture(ja, ko):
    assert "Japanese target groups" in survey_type("TM", "Age", False, ja.survey, ja.culture.adjective)[1]
    assert survey_type("TM", "Age", False, ko.survey, ko.culture.adjective)[1] == \
        "TM template: the Korean target groups must be found by the survey (type 1)"


def test_table1_without_paper_numbers_shows_counts_and_says_there_is_nothing_to_compare(ja):
    templates = load_templates(JA_EXAMPLE / "ja_example_templates.tsv", ja).templates
    table = build_table1(templates, {"Age": 128, "Religion": 32}, ja)
    text = render_markdown(table, "JaBBQ")
    assert "every compared count equals the paper" not in text and "paper" not in text.replace("`paper`", "")
    assert "nothing to compare" in text and "| Age | 1 | 2 | 1 | 4 | 128 |" in text
    assert "no published number: not compared" in render_csv(table)


# --- profiles by name and by path -----------------------------------------------------------------

def test_a_profile_name_is_never_taken_for_a_folder_of_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "ja").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_profile("ja").name == "ja"
    with pytest.raises(UserError, match="profile file does not exist"):
        load_profile("./ja")
    with pytest.raises(UserError, match="unknown profile 'xx'.*path of a .toml"):
        load_profile("xx")


def test_a_profile_path_in_a_pipeline_file_resolves_from_the_pipeline_file(tmp_path, monkeypatch):
    folder = tmp_path / "project" / "profiles" / "yy"
    shutil.copytree(PROJECT_ROOT / "core" / "profiles" / "ja", folder)
    (folder / "ja.toml").rename(folder / "yy.toml")
    pipeline = tmp_path / "project" / "pipeline.toml"
    pipeline.write_text('profile = "profiles/yy/yy.toml"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # not the pipeline's folder
    loaded = load_pipeline(pipeline)
    assert Path(loaded.profile) == folder / "yy.toml"
    assert load_profile(loaded.profile).argument == str(folder / "yy.toml")  # hints name it by its file
    assert load_profile("ja").argument == "ja"



# --- DeepL's languages, and a profile's prompts ---------------------------------------------------

def test_the_fake_deepl_lists_every_documented_target_language_and_the_client_reads_them():
    import deepl
    from fake_deepl import FAKE_KEY, TARGET_LANGUAGES, FakeDeepLServer

    server = FakeDeepLServer().start()
    try:
        listed = {language.code.upper() for language in deepl.Translator(FAKE_KEY, server_url=server.url)
                  .get_target_languages()}
    finally:
        server.stop()
    assert listed == {code for code, _, _ in TARGET_LANGUAGES} and len(listed) == 38
    assert {"JA", "KO", "ES", "ZH-HANT", "HE", "TH", "VI", "EN-GB", "PT-BR"} <= listed
    assert "CA" not in listed  # a beta language: only behind enable_beta_languages


def test_a_profile_without_prompts_in_its_language_never_gets_the_korean_ones(ja, tmp_path):
    from tasks.evaluation.prompts import resolve_prompt_table

    files = ja.files.model_copy(update={"evaluation_prompts": str(tmp_path / "absent.tsv")})
    missing = ja.model_copy(update={"files": files})
    with pytest.raises(UserError, match="profile ja names no prompt table that exists"):
        resolve_prompt_table(missing, None)
    assert resolve_prompt_table(ja, None)[0] == PROJECT_ROOT / "core" / "profiles" / "ja" / "evaluation_prompts.tsv"


def test_a_profile_copied_out_of_the_project_finds_its_prompt_table_in_its_folder(tmp_path):
    """The prompt table resolves from the profile's folder like every culture file, not from the project root."""
    from tasks.evaluation.prompts import resolve_prompt_table

    shutil.copytree(PROJECT_ROOT / "core" / "profiles" / "ja", tmp_path / "ja")
    copied = load_profile(tmp_path / "ja" / "ja.toml")
    assert resolve_prompt_table(copied, None)[0] == tmp_path.resolve() / "ja" / "evaluation_prompts.tsv"


# --- commands that read a release -----------------------------------------------------------------

def test_a_release_defaults_to_the_profiles_and_its_profile_comes_from_the_manifest(tmp_path):
    import json

    from tasks.audit.fates import default_release, release_profile

    assert default_release("ja") == Path("build") / "JaBBQ"
    assert default_release(None) == Path("build") / "KoBBQ-example"  # the embedded example's, as `kobbq build` writes
    (tmp_path / "manifest.json").write_text(json.dumps({"profile": "ja"}), encoding="utf-8")
    assert release_profile(tmp_path).name == "ja"
    with pytest.raises(UserError, match="built with profile 'ja', not 'ko'"):
        release_profile(tmp_path, "ko")
    (tmp_path / "manifest.json").write_text(json.dumps({"profile": "xx"}), encoding="utf-8")
    with pytest.raises(UserError, match="'xx', which is not a shipped profile; give its file with --profile"):
        release_profile(tmp_path)
