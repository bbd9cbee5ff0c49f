"""``kobbq validate PATH``: every problem of a template file, with file, row and column."""

from __future__ import annotations

import argparse
from pathlib import Path

from core import interrupt
from core.errors import UserError
from core.findings import Finding, errors, warnings
from kobbq.arguments import add_corrections, add_profile, corrections_file, profile_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate", help="check a template file (KoBBQ TSV, or English BBQ CSV / folder)",
        description="Report every problem of a template file. Exit code 1 on any error; warnings "
                    "(legal but suspicious) keep exit code 0. With a workbook profile (es, ca) PATH is the "
                    "folder of <Category>.xlsx templates; otherwise a .csv file or a folder is read as English "
                    "BBQ templates, and anything else as a KoBBQ-format TSV.")
    parser.add_argument("path", type=Path)
    add_profile(parser)
    add_corrections(parser, "validate the file exactly as it is")
    parser.add_argument("--errors-only", action="store_true", help="do not list warnings")
    parser.set_defaults(handler=run)


def findings_for(args: argparse.Namespace) -> tuple[list[Finding], str]:
    # The template loaders and checks (pandas): not for --help.
    from tasks.templates import bbq, corrections, validate

    path: Path = args.path
    if not path.exists():
        raise UserError("path does not exist", path)
    profile = profile_of(args)
    workbooks = profile.templates.workbook is not None
    if not workbooks and (path.is_dir() or path.suffix.lower() == ".csv"):
        templates, findings = bbq.load_bbq_templates(path)
        return findings, f"{len(templates)} English BBQ template rows"
    corrections_path = corrections_file(args, profile)
    loaded = validate.load_templates(path, profile,
                                    corrections.load_corrections(corrections_path) if corrections_path else [])
    findings = (validate.validate_workbook if workbooks else validate.validate_loaded)(loaded, profile)
    applied = f", {len(loaded.corrections)} correction(s) applied" if loaded.corrections else ""
    return findings, f"{len(loaded.templates)} {'workbook ' if workbooks else ''}template rows{applied}"


def run(args: argparse.Namespace) -> int:
    interrupt.leaves("validate writes no file")
    findings, what = findings_for(args)
    for finding in errors(findings) if args.errors_only else findings:
        print(finding.render())
    print(f"{args.path}: {what}; {len(errors(findings))} error(s), {len(warnings(findings))} warning(s)")
    return 1 if errors(findings) else 0
