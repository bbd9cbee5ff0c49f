"""Options several commands share, declared once: ``--profile`` and the corrections file.

Not a command (the leading underscore keeps ``kobbq.cli`` from registering it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import UserError
from core.profile import DEFAULT_PROFILE, Profile, load_profile

PROFILE_HELP = f"culture profile name or .toml path (default: {DEFAULT_PROFILE})"


def add_profile(parser: argparse.ArgumentParser, default: str | None = DEFAULT_PROFILE,
                help: str = PROFILE_HELP) -> None:
    """``--profile``; ``default=None`` where the command must know whether it was given."""
    parser.add_argument("--profile", default=default, help=help)


def profile_of(args: argparse.Namespace) -> Profile:
    """The profile the command was given (or the default), loaded: once per command."""
    return load_profile(args.profile or DEFAULT_PROFILE)


def add_corrections(parser: argparse.ArgumentParser, applied_to: str = "before validation") -> None:
    parser.add_argument("--corrections", type=Path, default=None,
                        help=f"corrections CSV applied {applied_to} (default: the profile's corrections.csv)")


def corrections_file(args: argparse.Namespace, profile: Profile) -> Path | None:
    """--corrections, else the profile folder's corrections file when it has one (ko does); none with
    --no-corrections."""
    if getattr(args, "no_corrections", False):
        return None
    if args.corrections is not None:
        if not args.corrections.exists():
            raise UserError("corrections file does not exist", args.corrections)
        return args.corrections
    return profile.existing_file("corrections")
