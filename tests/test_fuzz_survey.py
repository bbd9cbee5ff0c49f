"""Fuzzing: malformed survey results (respondent-level CSV with its questions.csv, the released aggregated JSON,
reading-comprehension results, overrides) given to `kobbq survey ingest` and `kobbq build --survey-results`.
The promises are tests/fuzzing.py's."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import strategies as st

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.profile import load_profile
from fuzzing import (EXAMPLE_BUILD, FUZZ_PROFILES, check_command, fuzz, malformed_json, malformed_table, in_child,
                     workspace, write)
from tasks.survey.survey_stage import released_format
from tasks.survey.inputs import SurveyInputs

SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"
RESPONSES = (SURVEY / "responses.csv").read_bytes()
QUESTIONS = (SURVEY / "questions.csv").read_bytes()
READING = (SURVEY / "reading_results.csv").read_bytes()
OVERRIDES = ("category,stereotype,template_id,rule,outcome,reason\n"
             "Age,,1,stereotype-survey,keep,kept on the release's authority\n").encode("utf-8")


@cache
def aggregated_results() -> bytes:
    """The example's respondents counted into the released JSON format (as `kobbq survey ingest` writes it)."""
    inputs = SurveyInputs(SURVEY / "responses.csv", questions=SURVEY / "questions.csv")
    return released_format(inputs.read(load_profile("ko")).results)


@st.composite
def malformed_survey(draw) -> dict[str, bytes]:
    """The survey's files with one of them damaged: {file name: bytes}; results.json or responses.csv."""
    files = {"questions.csv": QUESTIONS, "reading.csv": READING, "overrides.csv": OVERRIDES}
    if draw(st.booleans()):
        files["results.json"] = aggregated_results()
    else:
        files["responses.csv"] = RESPONSES
    damaged = draw(st.sampled_from(sorted(files)))
    if damaged.endswith(".json"):
        files[damaged] = draw(malformed_json(files[damaged]))
    else:
        files[damaged] = draw(malformed_table(files[damaged], ","))
    return files


def survey_options(files: dict[str, bytes], results: str, reading: str) -> list[str]:
    name = "results.json" if "results.json" in files else "responses.csv"
    return [results, f"in/{name}", "--questions", "in/questions.csv", reading, "in/reading.csv",
            "--overrides", "in/overrides.csv"]


def check_survey(files: dict[str, bytes], release: Path, runner=None) -> None:
    run = {"runner": runner} if runner else {}
    with workspace(release) as root:
        for name, data in files.items():
            write(root / "in" / name, data)
        if runner is None:  # `survey ingest` checks before Prefect; in a child process only the build runs
            check_command(["survey", "ingest", *survey_options(files, "--results", "--reading"), "--out",
                           "ingested", "--quiet"], root, outputs=["ingested"], release="build/KoBBQ")
        check_command(["build", "--templates", str(EXAMPLE_TEMPLATES), *EXAMPLE_BUILD, "--quiet",
                       *survey_options(files, "--survey-results", "--reading-results")], root,
                      outputs=["build"], release="build/KoBBQ", **run)


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_survey_results(profile, previous_release):
    fuzz(profile, malformed_survey(), lambda files: check_survey(files, previous_release), fast=6, long=150)


@pytest.mark.slow
@pytest.mark.subprocess
def test_malformed_survey_results_built_to_the_end(previous_release, prefect_api_url):
    child = in_child(prefect_api_url)
    fuzz("long", malformed_survey(), lambda files: check_survey(files, previous_release, child), long=3)
