"""What a release is built from, by role (``BuildInputs``): the manifest lists each input with its sha256, and the
release names them by file name only (``tasks.release.assemble.Portable``). Its fingerprint is the release stage's
(``tasks.pipeline.plan.StageCheck.fingerprint``): the one that decides whether the stage runs is the one recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.profile import Profile
from tasks.release.test_split import PROFILE, TestSplit, choose_test_split


@dataclass(frozen=True)
class BuildInputs:
    """Everything a release depends on, by role, and the fingerprint its stage computed from them."""

    profile: Profile
    templates: Path
    corrections: Path | None
    seed: int
    extra: dict[str, Path] = field(default_factory=dict)  # role -> file (survey results, overrides, ...)
    test_split_asked: str = PROFILE  # tasks.release.test_split: the profile's split, or "seeded"
    fingerprint: str = ""  # the release stage's (empty in tests that write a release folder directly)

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
