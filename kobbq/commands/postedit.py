"""``kobbq postedit export|import|reference``: the translator's round trip, and the release as reference."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import LabelsSection, PipelineConfig, TemplatesSection, TranslationSection
from kobbq.arguments import add_profile, add_quiet, blank, profile_of
from kobbq.commands.translate import add_common, run_stage
from kobbq.in_prefect import decisions_written, run_alone

POSTEDIT_DIR = DEFAULT_BUILD_DIR / "postedit"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("postedit", help="post-edit workbooks: export, import, or link the reference",
                                   description="The translator's side of the translation stage: the workbooks sent "
                                               "out, their import when they come back, or a released template file "
                                               "taken as the post-edit.")
    actions = parser.add_subparsers(dest="postedit_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write one xlsx per category from the recorded translation cache",
                                description="Write one post-edit workbook per category (source, DeepL draft, an "
                                            "editable column) from the translation cache, without calling DeepL.")
    add_common(export)
    add_quiet(export)
    export.set_defaults(handler=run)
    imp = actions.add_parser("import", help="read returned workbooks; write KoBBQ-format templates",
                             description="Read the translator's returned workbooks, check every edited cell, and "
                                         "write postedit_templates.tsv, the post-edit report and the decisions; "
                                         "nothing is written when any cell has an error.")
    imp.add_argument("workbooks", type=Path, nargs="+", help="returned postedit_<Category>.xlsx files")
    imp.add_argument("--out", type=Path, default=POSTEDIT_DIR, help="output folder (default: %(default)s)")
    imp.add_argument("--glossary", type=Path, default=None, help="glossary CSV (default: the profile's)")
    add_profile(imp)
    add_quiet(imp)
    imp.set_defaults(handler=run)
    ref = actions.add_parser("reference", help="take a released KoBBQ template file as the post-edit",
                             description="Link every ST/TM row of a released template file to its BBQ template and "
                                         "record the decisions, as if the file were the translator's post-edit.")
    ref.add_argument("--templates", type=Path, required=True, help="KoBBQ-format template TSV")
    ref.add_argument("--bbq", type=Path, required=True, help="folder of BBQ template CSVs")
    ref.add_argument("--out", type=Path, default=POSTEDIT_DIR, help="output folder (default: %(default)s)")
    add_profile(ref)
    add_quiet(ref)
    ref.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """The action named, with the workbook reader (pandas, openpyxl) imported now, not for --help."""
    from tasks.translation import workbook

    profile, stage = profile_of(args), "postedit"
    if args.postedit_command == "export":
        return run_stage(args, profile, replay=True)
    if args.postedit_command == "reference":
        config = PipelineConfig(profile=profile.argument, labels=LabelsSection(bbq=str(args.bbq)),
                                translation=TranslationSection(reference=str(args.templates)),
                                templates=TemplatesSection(corrections=blank(profile.existing_file("corrections"))))
        print(run_alone(stage, config, profile, args.out, args).text)
        return 0
    for path in args.workbooks:  # a refused workbook fails here, before Prefect starts
        workbook.read_workbook(path, profile)
    translation = TranslationSection(workbooks=[str(p) for p in args.workbooks], glossary=blank(args.glossary))
    output = run_alone(stage, PipelineConfig(profile=profile.argument, translation=translation), profile, args.out, args)
    print(f"{output.counts['rows']} template rows imported")
    for path in output.outputs.values():
        print(f"wrote {path}")
    print(f"wrote {decisions_written(stage, args.out)}")
    return 0
