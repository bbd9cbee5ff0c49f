"""``kobbq status``: each stage of a pipeline's build folder: done, waiting, stale, failed, damaged, or not run."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="the state of every pipeline stage in a build folder",
                                   description="Show each stage of the pipeline: done (counts, when), waiting "
                                               "(for what), stale (inputs changed since), failed (why), damaged "
                                               "(a file it wrote changed or gone since; the release replaced by "
                                               "another build), or not run. Reads only; starts nothing.")
    parser.add_argument("--pipeline", type=Path, required=True, help="the pipeline file")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR, help="build folder (default: %(default)s)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The stage modules (pandas among their imports), loaded only when the command runs, not for --help.
    from core.pipeline_file import describe
    from tasks.build.pipeline import Plan, context, load_pipeline, stages_for

    pipeline = load_pipeline(args.pipeline)
    plan = Plan.of(context(pipeline, args.out), stages_for(pipeline))
    print(f"pipeline {args.pipeline} -> {plan.ctx.folder.path}")
    for check in plan.checks:
        status, detail = describe(check.state, check.fingerprint, check.problem)
        print(f"  {check.stage.name:14} {status:8} {detail}")
    return 0
