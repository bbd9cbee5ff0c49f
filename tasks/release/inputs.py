"""What a release is built from: the build flow's one request (``ReleaseRequest``) and its inputs by role
(``BuildInputs``), whose fingerprint decides whether a rebuild can be skipped.

Kept apart from the assembly (and its pandas) so that a command can compare the fingerprint with the
published release's manifest in a fraction of a second, before anything heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.fingerprint import fingerprint
from core.profile import Profile
from core.release_folder import ReleaseFolder
from tasks.release.test_split import PROFILE, TestSplit, choose_test_split


@dataclass(frozen=True)
class BuildInputs:
    """Everything a release depends on; its fingerprint decides whether a rebuild can be skipped."""

    profile: Profile
    templates: Path
    corrections: Path | None
    seed: int
    extra: dict[str, Path] = field(default_factory=dict)  # role -> file (survey results, overrides, ...)
    test_split_asked: str = PROFILE  # tasks.release.test_split: the profile's split, or "seeded"

    @property
    def test_split(self) -> TestSplit:
        return choose_test_split(self.profile, self.test_split_asked, self.seed)

    def files(self) -> dict[str, Path]:
        """Role -> file; a folder of templates (workbooks, vocabulary) counts file by file."""
        templates = ({f"templates/{p.name}": p for p in sorted(self.templates.glob("*.xlsx"))}
                     if self.templates.is_dir() else {"templates": self.templates})
        files = {**templates, **self.extra}
        if self.corrections is not None:
            files["corrections"] = self.corrections
        if self.profile.path is not None:
            files["profile"] = self.profile.path
        listed = self.test_split.ids_file
        if listed is not None:
            files["test_split"] = listed
        return dict(sorted(files.items()))

    def fingerprint(self) -> str:
        """Hash of the inputs' contents, the seed, the test split asked for, and the project's own code."""
        return fingerprint(self.files(), settings=f"seed={self.seed};test_split={self.test_split_asked}")


@dataclass(frozen=True)
class ReleaseRequest:
    """One release to build, in one value: ``kobbq build --templates``, a pipeline's release stage and a
    deployment run each make one (the profile loaded once), and the build flow takes nothing else.

    ``survey_files``: the survey stage's inputs (role -> file), recorded in the manifest.
    ``survey_decisions``: that stage's decisions file; its template decisions say which templates survive.
    ``upstream``: decision logs of earlier stages (stage -> CSV), merged into the release's log.
    ``parallel``: twin releases (name -> template file, e.g. mtBBQ) expanded for the surviving templates.
    ``reports``: earlier stages' reports (name in the release -> file), copied into the release.
    ``test_split``: ``profile`` (the IDs the profile lists, else the seeded draw) or ``seeded``.
    ``rebuild``: build even when the folder holds this release already (``--force``, or the caller has just
    found that it does not: the check runs once).
    """

    profile: Profile
    folder: ReleaseFolder
    templates: Path
    corrections: Path | None = None
    seed: int | None = None
    test_split: str = PROFILE
    survey_files: dict[str, Path] = field(default_factory=dict)
    survey_decisions: Path | None = None
    upstream: dict[str, Path] = field(default_factory=dict)
    parallel: dict[str, Path] = field(default_factory=dict)
    reports: dict[str, Path] = field(default_factory=dict)
    rebuild: bool = False

    def inputs(self) -> BuildInputs:
        """The release's inputs by role: the build flow and the up-to-date check compute the same fingerprint."""
        extra = {**self.survey_files,
                 **{f"decisions_{stage}": path for stage, path in self.upstream.items()},
                 **{f"parallel_{twin}": path for twin, path in self.parallel.items()},
                 **{f"report_{name}": path for name, path in self.reports.items()}}
        seed = self.profile.release.seed if self.seed is None else self.seed
        return BuildInputs(self.profile, Path(self.templates), self.corrections, seed, extra, self.test_split)

    def current(self) -> BuildResult | None:
        """The release as it is when the folder holds exactly what this request builds; None when it must be
        built (always with ``rebuild``)."""
        if self.rebuild:
            return None
        manifest = self.folder.current_manifest(self.inputs().fingerprint())
        return None if manifest is None else BuildResult.of(self.folder, manifest, up_to_date=True)


@dataclass(frozen=True)
class BuildResult:
    release_dir: Path
    samples: int
    test_samples: int
    up_to_date: bool  # True when nothing was rebuilt

    @classmethod
    def of(cls, folder: ReleaseFolder, manifest: dict, up_to_date: bool) -> BuildResult:
        return cls(folder.path, manifest["samples"], manifest["test_samples"], up_to_date)
