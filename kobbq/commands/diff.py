"""``kobbq diff OLD NEW``: two template files or two release folders compared."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import UserError
from core.release_folder import MANIFEST
from core.profile import DEFAULT_PROFILE
from kobbq.arguments import add_corrections, add_profile, corrections_file, profile_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two template files or two release folders",
        description="Compare two KoBBQ template files (loaded as the build loads them: corrections applied, "
                    "text normalised, then expanded) or two release folders (samples by ID, template fates "
                    "from the decision logs). Lists templates added, removed and changed with their sample "
                    "counts, and the corrections each template file needed.")
    parser.add_argument("old", type=Path, help="old template TSV or release folder")
    parser.add_argument("new", type=Path, help="new template TSV or release folder")
    add_profile(parser,
                help=f"culture profile name or .toml path (default: for releases, the one they were built with; "
                     f"for template files, {DEFAULT_PROFILE})")
    add_corrections(parser, "compare the template files exactly as they are", applied_to="to template files")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The audit package and the template loaders (pandas): not for --help.
    from tasks.audit import diff, fates

    for path in (args.old, args.new):
        if not path.exists():
            raise UserError("does not exist", path)
    if args.old.is_dir() != args.new.is_dir():
        kinds = ["folder" if path.is_dir() else "file" for path in (args.old, args.new)]
        raise UserError(f"compare two template files or two release folders, not a {kinds[0]} with a {kinds[1]}")
    if (args.old / MANIFEST).exists():
        old, new = fates.release_profile(args.old, args.profile), fates.release_profile(args.new, args.profile)
        if old.name != new.name:
            raise UserError(f"{args.old} was built with profile {old.name!r} and {args.new} with {new.name!r}; "
                            "compare two releases of one profile")
        changes = diff.diff_releases(args.old, args.new, old)
    else:
        profile = profile_of(args)
        changes = diff.diff_template_files(args.old, args.new, profile, corrections_file(args, profile))
    print(diff.render_diff(changes), end="")
    return 0
