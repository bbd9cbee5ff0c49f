"""Fuzzing: a culture profile given as a folder (`--profile FOLDER/ko.toml`) with its TOML or one of its files
damaged (corrections, survey groups, options and overrides, the listed test split), through `kobbq validate`,
`kobbq build --templates [--survey-results]` and `kobbq eval prepare`. The promises are tests/fuzzing.py's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import strategies as st

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from core.profile import PROFILE_DIR
from fuzzing import (EXAMPLE_BUILD, FUZZ_PROFILES, check_command, fuzz, malformed_table, malformed_toml,
                     previous_release, workspace, write)

__all__ = ["previous_release"]

KO = PROFILE_DIR / "ko"
SURVEY = PROJECT_ROOT / "survey" / "ko" / "example"
# The profile folder's files a command reads, and how each is damaged.
FILES = {"ko.toml": "toml", "survey/options.toml": "toml", "corrections.csv": ",", "survey/groups.csv": ",",
         "survey/overrides.csv": ",", "KoBBQ_test_sample_ids.txt": "\n"}


def malformed_profile() -> st.SearchStrategy[tuple[str, bytes]]:
    """(file of the profile folder, its damaged bytes)."""
    def damaged(name: str) -> st.SearchStrategy[tuple[str, bytes]]:
        data = (KO / name).read_bytes()
        how = FILES[name]
        files = malformed_toml(data) if how == "toml" else malformed_table(data, how if how != "\n" else "\t")
        return files.map(lambda bad: (name, bad))
    return st.sampled_from(sorted(FILES)).flatmap(damaged)


def check_profile(case: tuple[str, bytes], release: Path, fuzz_profile: str) -> None:
    name, data = case
    prompts = ["--prompt-ids", "1"] if fuzz_profile == "fast" else []
    with workspace(release) as root:
        shutil.copytree(KO, root / "profile" / "ko")
        write(root / "profile" / "ko" / name, data)
        profile = ["--profile", "profile/ko/ko.toml"]
        check_command(["validate", str(EXAMPLE_TEMPLATES), *profile], root, outputs=[], release="build/KoBBQ")
        check_command(["build", "--templates", str(EXAMPLE_TEMPLATES), *profile, *EXAMPLE_BUILD, "--quiet",
                       "--survey-results", str(SURVEY / "responses.csv"), "--questions", str(SURVEY / "questions.csv"),
                       "--reading-results", str(SURVEY / "reading_results.csv")], root, outputs=["build"],
                      release="build/KoBBQ")
        check_command(["eval", "prepare", "--release", "build/KoBBQ", *profile, "--out", "prepared", *prompts], root,
                      outputs=["prepared"], release="build/KoBBQ")


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_profile_folder(profile, previous_release):
    fuzz(profile, malformed_profile(), lambda case: check_profile(case, previous_release, profile), fast=5,
         long=100)
