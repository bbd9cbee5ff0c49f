"""``kobbq particles check``: inline particles checked against their fillers (``tasks.translation.particles``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import UserError
from kobbq.arguments import add_corrections, add_profile, corrections_file, profile_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("particles", help="Korean particle checks on a KoBBQ-format template file",
                                   description="Check the particle written after every inline filler of a template "
                                               "file (은/는, 이/가, ...) against the filler's final consonant.")
    actions = parser.add_subparsers(dest="particles_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="regenerate each inline item from its filler and particle; report agreement",
        description="Exit code 1 when an item disagrees; items whose stem is not their filler are warnings.")
    check.add_argument("--templates", type=Path, required=True, help="KoBBQ-format template TSV")
    add_profile(check)
    add_corrections(check, "check the file exactly as it is", applied_to="first")
    check.add_argument("--quiet", action="store_true", help="do not list the warnings")
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The template loader and the particle checks (hgtk): not for --help.
    from tasks.templates import corrections, load
    from tasks.translation import particles

    profile = profile_of(args)
    if not profile.particles.enabled:
        raise UserError(f"profile {profile.name} has no particles that change with the word before them "
                        "([particles] enabled = false): nothing to check")
    corrections_path = corrections_file(args, profile)
    loaded = load.load_kobbq_templates(args.templates,
                                       corrections.load_corrections(corrections_path) if corrections_path else [],
                                       profile.templates.separators)
    report = particles.check_items(loaded.templates, [tuple(p) for p in profile.particles.pairs])
    for finding in report.findings():
        if finding.severity == "error" or not args.quiet:
            print(finding.render())
    for note in report.unpaired_lists:
        print(f"warning: {args.templates}: {note} (not checked) [list-length]")
    print(f"{report.items} inline items: {report.checked} start with their filler, {len(report.not_stem)} do not "
          f"(warnings), {len(report.disagree)} disagree")
    print(report.summary_line())
    return 1 if report.disagree else 0
