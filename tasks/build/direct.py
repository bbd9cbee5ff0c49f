"""``kobbq build --templates`` once its release is known not to be up to date (``tasks.build.request``):
every input checked before anything is written or Prefect starts, then the flow's request.

``check_inputs`` reads and checks the templates, runs the survey rules (here, once) and tries the
templates against the profile's listed test split. ``release_request``, inside the build folder's lock,
records the survey's outcome where a pipeline's would be (the flow reads its decisions) and hands back
the flow's request, or the release as it is when the release built with those decisions is current.
"""

from __future__ import annotations

from dataclasses import replace

from tasks.build.request import DirectBuild
from tasks.release.assemble import expand_release
from tasks.release.inputs import BuildResult, ReleaseRequest
from tasks.survey.survey_stage import SurveyStage, record_for_release, survey_stage
from tasks.templates.validate import load_checked


def check_inputs(build: DirectBuild) -> SurveyStage | None:
    """Nothing written, sub-second: bad input, a survey that drops templates, or templates that do not fit the
    profile's listed test split are found here. The survey stage's outcome, when results are given."""
    loaded, _ = load_checked(build.templates, build.corrections, build.profile)
    stage = survey_stage(loaded.templates, build.survey, build.profile) if build.survey else None
    if build.profile.templates.workbook is None:  # a generated release has no test split to check
        split = build.request().inputs().test_split
        expand_release(stage.kept if stage else loaded.templates, build.profile, split.seed, split=split)
    return stage


def release_request(build: DirectBuild, survey: SurveyStage | None) -> ReleaseRequest | BuildResult:
    """The flow's request, which never checks again (``rebuild``): ``DirectBuild.current`` or this did."""
    if survey is None:
        return replace(build.request(), rebuild=True)
    recorded = record_for_release(survey, build.folder.work / "survey")
    request = build.request(recorded.decisions, recorded.reports)
    return request.current() or replace(request, rebuild=True)
