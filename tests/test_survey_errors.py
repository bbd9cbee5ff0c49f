"""Bad survey-stage input stops with a UserError naming file, row and column, never a traceback
or a silent drop: template errors the survey meets, unreadable results, reading questionnaires."""

from __future__ import annotations

import pytest

from core.errors import UserError
from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from tasks.survey.apply import apply_survey_rules
from tasks.survey.inputs import SurveyData, SurveyInputs, load_survey_results
from tasks.survey.survey_stage import survey_stage
from tasks.templates.load import load_kobbq_templates

EXAMPLE = PROJECT_ROOT / "survey" / "ko" / "example"


def _edited_templates(tmp_path, edit):
    """The example template file with ``edit(line_number, columns dict)`` applied to each data row."""
    lines = EXAMPLE_TEMPLATES.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    out = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("\t")))
        edit(number, row)
        out.append(row)
    columns = list(out[0])
    path = tmp_path / "templates.tsv"
    path.write_text("\n".join(["\t".join(columns)] + ["\t".join(r[c] for c in columns) for r in out]) + "\n",
                    encoding="utf-8")
    return path


def _bad_marker(number, row):
    row["Reference_names_non_target"] = "yse" if number == 8 else "no"


def _no_target(number, row):
    if number == 4:
        row["Target_group"] = ""


@pytest.mark.parametrize("edit, row, column, message", [
    (_bad_marker, 8, "Reference_names_non_target", "'yse' is not yes or no"),
    (_no_target, 4, "Target_group", "type-2 stereotype needs its intended target"),
])
def test_template_errors_stop_the_filter_and_the_build_stage(tmp_path, ko_profile, edit, row, column, message):
    path = _edited_templates(tmp_path, edit)
    templates = load_kobbq_templates(path).templates
    results = load_survey_results(EXAMPLE / "responses.csv", ko_profile)
    with pytest.raises(UserError, match=message) as error:
        apply_survey_rules(templates, SurveyData(results), ko_profile)
    assert f"{path}, row {row}, column {column}: " in error.value.render()  # file, row and column named
    with pytest.raises(UserError, match=message):
        survey_stage(templates, SurveyInputs(EXAMPLE / "responses.csv"), ko_profile)


def test_results_json_that_is_not_utf8(tmp_path, ko_profile):
    path = tmp_path / "results.json"
    path.write_bytes('[{"category": "Age", "stereotype": "고집"}]'.encode("cp949"))
    with pytest.raises(UserError, match="not UTF-8") as error:
        load_survey_results(path, ko_profile)
    assert error.value.render().startswith(f"{path}, row 1, column 37: ")  # line and column, not a byte offset


def _zip(path, members):
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _damaged_workbook(path):
    """A real workbook whose sheet XML is cut in half."""
    import io
    import zipfile

    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.active.append(["question_id", "respondent_id", "gender", "age_band", "answer"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    source = zipfile.ZipFile(buffer)
    members = {}
    for name in source.namelist():
        data = source.read(name)
        members[name] = data[: len(data) // 2] if name.endswith("sheet1.xml") else data
    return _zip(path, members)


@pytest.mark.parametrize("make", [
    lambda path: path.write_bytes(b"question_id,respondent_id\n"),  # a CSV renamed to .xlsx
    lambda path: _zip(path, {"hello.txt": "not a workbook"}),
    _damaged_workbook,
], ids=["not-a-zip", "zip-without-workbook", "damaged-sheet"])
def test_unreadable_xlsx_results(tmp_path, ko_profile, make):
    path = tmp_path / "responses.xlsx"
    make(path)
    with pytest.raises(UserError, match="not a readable .xlsx workbook") as error:
        load_survey_results(path, ko_profile, EXAMPLE / "questions.csv")
    assert error.value.where == path


def test_duplicate_column_names_in_results(tmp_path, ko_profile):
    lines = (EXAMPLE / "responses.csv").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "responses.csv"
    path.write_text("\n".join([lines[0] + ",answer"] + [line + ",x" for line in lines[1:]]) + "\n",
                    encoding="utf-8")
    with pytest.raises(UserError, match="duplicate column 'answer'") as error:
        load_survey_results(path, ko_profile, EXAMPLE / "questions.csv")
    assert (error.value.where.row, error.value.where.column) == (1, "answer")


def test_missing_questions_file_names_both_ways_to_give_it(tmp_path, ko_profile):
    path = tmp_path / "responses.csv"
    path.write_bytes((EXAMPLE / "responses.csv").read_bytes())
    with pytest.raises(UserError) as error:
        load_survey_results(path, ko_profile)
    message = error.value.message
    assert "questions.csv" in message and "`--questions` on the command line" in message
    assert "`survey.questions` in a pipeline file" in message


def _profile_overrides(tmp_path, monkeypatch, text):
    """The ko profile folder copied under tmp_path with ``text`` as its survey's default overrides.csv."""
    import shutil

    import core.profile

    folder = tmp_path / "profiles"
    shutil.copytree(core.profile.PROFILE_DIR / "ko", folder / "ko")
    (folder / "ko" / "survey" / "overrides.csv").write_text(text, encoding="utf-8")
    monkeypatch.setattr(core.profile, "PROFILE_DIR", folder)
    return folder / "ko" / "survey" / "overrides.csv", core.profile.load_profile("ko")


def test_build_and_ingest_apply_the_profile_default_overrides(tmp_path, monkeypatch):
    # 고집이 셈 (Age 2) fails the two-thirds rule on the example (55 of 85); a default override keeps it.
    default, ko_profile = _profile_overrides(tmp_path, monkeypatch,
                                             "category,stereotype,template_id,rule,outcome,reason\n"
                                             "Age,고집이 셈,,type2-two-thirds,keep,checked by a second survey wave\n")
    templates = load_kobbq_templates(EXAMPLE_TEMPLATES).templates
    stage = survey_stage(templates, SurveyInputs(EXAMPLE / "responses.csv"), ko_profile)
    assert ("Age", 2) in {t.template_key for t in stage.kept}
    marked = [d for d in stage.decisions if d.override]
    assert [(d.subject, d.rule) for d in marked] == [("stereotype:Age:고집이 셈", "type2-two-thirds")]
    assert "checked by a second survey wave" in stage.reports["funnel.md"]
    # The build's fingerprint can name the file used.
    assert SurveyInputs(EXAMPLE / "responses.csv").resolve(ko_profile).files()["survey_overrides"] == default


def test_unmatched_results_are_refused_unless_allowed_in_the_build_as_in_ingest(ko_profile):
    survivors = [t for t in load_kobbq_templates(EXAMPLE_TEMPLATES).templates if t.template_key != ("Age", 2)]
    with pytest.raises(UserError, match="1 survey result\\(s\\) match no template's question.*--allow-unmatched"):
        survey_stage(survivors, SurveyInputs(EXAMPLE / "responses.csv"), ko_profile)
    stage = survey_stage(survivors, SurveyInputs(EXAMPLE / "responses.csv", allow_unmatched=True), ko_profile)
    unmatched = [d for d in stage.decisions if d.rule == "result-without-template"]
    assert [d.subject for d in unmatched] == ["stereotype:Age:고집이 셈"]
    assert "Results that match no template's question: 1." in stage.reports["funnel.md"]
    data = SurveyInputs(EXAMPLE / "responses.csv").read(ko_profile)
    with pytest.raises(UserError, match="1 survey result\\(s\\) match no template's question"):
        apply_survey_rules(survivors, data, ko_profile, allow_unmatched=False)
