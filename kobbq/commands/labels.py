"""``kobbq labels ...``: categorization labelling (export, import + agreement, consensus, reference)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from core.atomic import write_with
from core.console import counts_text
from core.decisions import write_decisions_csv
from core.errors import UserError
from core.tables import write_csv_rows
from core.pipeline_file import LabelsSection, PipelineConfig
from core.paths import DEFAULT_BUILD_DIR, EXAMPLE_DIR
from kobbq.arguments import add_profile, add_quiet, default_said, profile_of, shown
from kobbq.in_prefect import run_alone

EXAMPLE_BBQ = EXAMPLE_DIR / "bbq"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "labels", help="categorization labelling: annotator workbooks, agreement, consensus, reference",
        description="Step 1 of the paper: annotators label every BBQ template ST (simply-transferred), "
                    "TM (target-modified) or SR (sample-removed); disagreements are settled in a consensus file.")
    commands = parser.add_subparsers(dest="labels_command", metavar="SUBCOMMAND", required=True)
    parser.set_defaults(handler=run_step)

    def common(sub: argparse.ArgumentParser, categories: bool = True) -> None:
        add_profile(sub)
        sub.add_argument("--bbq", type=Path, default=None,
                         help="English BBQ templates: a folder of 'new_templates - <Category>.csv' or one file "
                              f"(default: the embedded example, {shown(EXAMPLE_BBQ)})")
        if categories:
            sub.add_argument("--categories", nargs="+", default=None, metavar="BBQ_CATEGORY",
                             help="only these BBQ categories (file names, e.g. Age Race_ethnicity)")
            sub.add_argument("--not-taken", action="append", default=None, metavar="BBQ_TEMPLATE",
                             help="a BBQ template not taken into this release (bbq:Age:3; repeat for each): nobody "
                                  "labels it, and it counts nowhere (a pipeline's [labels] not_taken)")

    export = commands.add_parser("export", help="write one labelling workbook (xlsx) per annotator",
                                 description="One row per BBQ template with a locked description, an ST/TM/SR "
                                             "drop-down and a rationale cell.")
    common(export)
    export.add_argument("--annotator", action="append", required=True, metavar="NAME",
                        help="annotator name (repeat for each annotator); the file is labels_<NAME>.xlsx")
    export.add_argument("--out", type=Path, default=Path("labels"), help="output folder (default: %(default)s)")
    export.set_defaults(step=run_export)

    importer = commands.add_parser("import", help="check annotators' workbooks/CSVs and print their agreement",
                                   description="All files are checked (label, template ID, template set, rationale); "
                                               "any problem stops the import with every problem listed.")
    common(importer)
    importer.add_argument("files", nargs="+", type=Path, help="filled workbooks (.xlsx) or CSVs (template,label,rationale)")
    importer.add_argument("--draft", type=Path, default=None,
                          help="also write a consensus draft CSV (agreed labels filled in, disagreements blank)")
    importer.set_defaults(step=run_import)

    consensus = commands.add_parser("consensus", help="apply the consensus file: final labels, decisions (runs the flow)",
                                    description="Refuses any BBQ template without a final label; writes labels.csv, "
                                                "agreement.txt and decisions_labels.csv into --out.")
    common(consensus)
    consensus.add_argument("consensus", type=Path, help="consensus CSV (template,label,rationale)")
    consensus.add_argument("--annotations", nargs="+", type=Path, default=[],
                           help="the annotators' files, to record the votes in the decisions")
    consensus.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR / "labels",
                           help="output folder (default: %(default)s)")
    add_quiet(consensus)
    consensus.set_defaults(step=run_consensus)

    reference = commands.add_parser("reference", help="the labels a released template file implies, beside Table 1",
                                    description="ST/TM from the BBQ_category/BBQ_id links, NC from rows without one; "
                                                "BBQ templates nobody links to are reported as unlinked (SR or "
                                                "dropped by the survey: the public files do not say which).")
    common(reference, categories=False)
    reference.add_argument("--templates", type=Path, required=True, help="template file in the profile's format (a KoBBQ TSV, e.g. the release; for es/ca the workbook folder)")
    reference.add_argument("--decisions", type=Path, default=None, help="also write the decisions to this CSV")
    reference.set_defaults(step=run_reference)


def run_step(args: argparse.Namespace) -> int:
    """The step named, once the labels modules (pandas, openpyxl) are imported as this module's names: here, not at the
    top, because ``kobbq --help`` imports every command module."""
    global agreement, annotations, labels_stage, template_set, validate
    from tasks.labels import agreement, annotations, labels_stage, template_set
    from tasks.templates import validate

    return args.step(args)


def bbq_of(args: argparse.Namespace) -> Path:
    """--bbq, else the embedded example's English BBQ templates, said in one line."""
    return args.bbq or default_said("the embedded example's four English BBQ templates", EXAMPLE_BBQ, "--bbq")


def _items(args: argparse.Namespace, categories: list[str] | None = None, recorded: str | None = None):
    profile, bbq = profile_of(args, recorded), bbq_of(args)
    templates, items = template_set.load_label_items(bbq, profile, categories if categories is not None else args.categories,
                                        args.not_taken or [])
    if not items:
        raise UserError("no BBQ templates of the chosen categories", bbq)
    return profile, templates, items


def run_export(args: argparse.Namespace) -> int:
    profile, _, items = _items(args)
    args.out.mkdir(parents=True, exist_ok=True)
    for annotator in args.annotator:
        path = annotations.write_workbook(items, args.out / f"labels_{annotator}.xlsx", annotator, profile)
        print(f"wrote {path} ({len(items)} templates)")
    return 0


def run_import(args: argparse.Namespace) -> int:
    files = [annotations.read_annotator_file(path) for path in args.files]
    recorded = next((f.meta["profile"] for f in files if f.meta.get("profile")), None)  # what the workbooks say
    profile, _, items = _items(args, args.categories or annotations.categories_in(files), recorded)
    annotators, findings = annotations.check_annotator_files(files, items, profile.labels.require_rationale, profile.name)
    template_set.raise_if_errors(f"{len(files)} annotator file(s)", findings)
    report = agreement.agreement(annotators, items)
    print(report.text)
    if args.draft:
        rows = agreement.draft_consensus_rows(annotators, items)
        write_csv_rows(args.draft, agreement.DRAFT_COLUMNS, [[row[c] for c in agreement.DRAFT_COLUMNS] for row in rows])
        print(f"\nwrote the consensus draft {args.draft}: fill in the blank labels and rationales")
    return 0


def run_consensus(args: argparse.Namespace) -> int:
    profile = profile_of(args)
    labels = LabelsSection(bbq=str(bbq_of(args)), consensus=str(args.consensus),
                           annotations=[str(path) for path in args.annotations], categories=args.categories or [],
                           not_taken=args.not_taken or [])
    output = run_alone("labels", PipelineConfig(profile=profile.argument, labels=labels), profile, args.out, args)
    agreement_file = output.outputs.get("report:labels_agreement.txt")
    if agreement_file is not None:
        print(agreement_file.read_text(encoding="utf-8"))
    labels = ", ".join(f"{label} {output.counts.get(label, 0)}" for label in ("ST", "TM", "SR"))
    print(f"{sum(output.counts.values())} BBQ templates: {labels}")
    print(f"wrote {output.outputs['labels']} and {args.out / 'decisions_labels.csv'} "
          f"({len(output.decisions)} decisions)")
    return 0


def run_reference(args: argparse.Namespace) -> int:
    profile = profile_of(args)
    result = labels_stage.labels_from_links(validate.load_templates(args.templates, profile).templates, bbq_of(args), profile)
    print(result.text)
    # What the links say, a released file's own inconsistencies included, is the answer (printed above); only links
    # into BBQ templates that are not there (the wrong --bbq) make it fail.
    if unresolved := any(f.code == "unknown-bbq-link" for f in result.findings):
        print(f"\nSome links do not resolve: pass --bbq with the BBQ templates {args.templates.name} was built from.")
    if args.decisions:
        write_with(args.decisions, lambda path: write_decisions_csv(result.decisions, path))
        outcomes = dict(sorted(Counter(d.outcome for d in result.decisions).items()))
        print(f"wrote {len(result.decisions)} decisions to {args.decisions} ({counts_text(outcomes)})")
    return 1 if unresolved else 0
