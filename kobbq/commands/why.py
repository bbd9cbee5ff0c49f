"""``kobbq why ID --release DIR``: the lineage of a template, BBQ template, sample or stereotype."""

from __future__ import annotations

import argparse
from pathlib import Path

from kobbq.arguments import add_profile, release_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "why", help="why is a template, sample or stereotype in the release, or why was it dropped?",
        description="Print the lineage of one ID from the release's decision log: label and rationale, "
                    "translation, survey numbers and each rule's outcome, overrides, the samples it expanded "
                    "to, and whether it is in the release. A dropped template shows the rule and the numbers "
                    "that dropped it first. ID: a template (race_ethnicity_nationality-027 or "
                    "Race_ethnicity_nationality|27), a BBQ template (bbq:Religion:18), a sample ID "
                    "(age-001a-002-amb-bsd) or a stereotype text.")
    parser.add_argument("id", help="template, bbq:<Category>:<Q_id>, sample ID or stereotype text")
    parser.add_argument("--release", type=Path, default=None,
                        help="release folder (default: build/<the profile's release name>; without --profile, "
                             "build/KoBBQ-example, the embedded example's)")
    add_profile(parser,
                help="culture profile name or .toml path (default: the one the release was built with)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The audit package: not for --help.
    from tasks.audit import fates, lineage

    release = release_of(args)
    profile = fates.release_profile(release, args.profile)
    log = fates.load_audit_log(release)
    print(lineage.render_lineage(lineage.explain(args.id, log, profile)), end="")
    return 0

