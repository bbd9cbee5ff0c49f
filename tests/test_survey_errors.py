"""Bad survey-stage input stops with a UserError naming file, row and column, never a traceback
or a silent drop: template errors the survey meets, unreadable results, reading questionnaires."""

from __future__ import annotations

import pytest

from kobbq.errors import UserError
from kobbq.paths import EXAMPLE_TEMPLATES, SURVEY_DIR
from tasks.survey import filter_templates, load_survey_results
from tasks.survey_stage import SurveyInputs, survey_stage
from tasks.templates import load_kobbq_templates

EXAMPLE = SURVEY_DIR / "ko" / "example"


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
        filter_templates(templates, results, None, [], ko_profile)
    assert (error.value.where.file, error.value.where.row, error.value.where.column) == (str(path), row, column)
    with pytest.raises(UserError, match=message):
        survey_stage(templates, SurveyInputs(EXAMPLE / "responses.csv"), ko_profile)
