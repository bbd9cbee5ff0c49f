"""``kobbq build --templates``'s request: one template file to one release, the survey stage optional.

Light on purpose (no template loaders, no pandas): the command answers "up to date" from it
(``DirectBuild.current``) in a fraction of a second; ``tasks.build.direct`` does the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.profile import Profile
from core.release_folder import ReleaseFolder
from tasks.release.inputs import BuildResult, ReleaseRequest
from tasks.release.test_split import PROFILE
from tasks.survey.inputs import SurveyInputs


@dataclass(frozen=True)
class DirectBuild:
    profile: Profile  # loaded once, by the command
    folder: ReleaseFolder
    templates: Path
    corrections: Path | None = None
    seed: int | None = None
    test_split: str = PROFILE
    survey: SurveyInputs | None = None  # resolved (default overrides named) and checked to exist
    force: bool = False

    def request(self, decisions: Path | None = None, reports: dict[str, Path] | None = None) -> ReleaseRequest:
        """The build flow's request; with the survey stage's recorded decisions and reports once recorded."""
        return ReleaseRequest(self.profile, self.folder, self.templates, self.corrections, self.seed, self.test_split,
                              survey_files=self.survey.files() if self.survey else {}, survey_decisions=decisions,
                              upstream={"survey": decisions} if decisions else {}, reports=reports or {},
                              rebuild=self.force)

    def current(self) -> BuildResult | None:
        """Without a survey the release's fingerprint needs only the input files: the release as it is when it
        is up to date, found before anything is read (an unchanged input was valid when it was built). With a
        survey the fingerprint needs its decisions: None, as with ``--force``."""
        return None if self.survey is not None else self.request().current()
