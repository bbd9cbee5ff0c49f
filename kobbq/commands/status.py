"""``kobbq status``: each stage of a pipeline's build folder (its help says which states and what is hashed)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import DAMAGED, describe, load_pipeline


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="the state of every pipeline stage in a build folder",
                                   description="Show each stage of the pipeline: done (counts, when), waiting "
                                               "(for what), stale (which of its inputs, settings or code changed "
                                               "since), failed (why), damaged "
                                               "(a file it wrote changed or gone since; the release replaced by "
                                               "another build), or not run. The release's files are hashed "
                                               "again only when their size or times changed since they were last "
                                               "checked (recorded beside the release, in .<name>.verified.json); "
                                               "--verify hashes every one. Says when a build is running on the "
                                               "release. Starts nothing; exits 1 when a stage is damaged.")
    parser.add_argument("--pipeline", type=Path, required=True, help="the pipeline file")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR, help="build folder (default: %(default)s)")
    parser.add_argument("--verify", action="store_true",
                        help="hash every file of the release, also those whose size and times are as last checked "
                             "(a change that kept them would go unseen otherwise)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The stage modules (pandas among their imports), loaded only when the command runs, not for --help.
    from tasks.pipeline import plan as plans, run as runner

    pipeline = load_pipeline(args.pipeline)
    ctx = replace(plans.context(pipeline, args.out), trust_record=not args.verify)
    plan = plans.Plan.of(ctx, plans.stages_for(pipeline))
    print(f"pipeline {args.pipeline} -> {plan.ctx.folder.path}")
    running = runner.running_build(plan.ctx.folder.path)
    if running is not None:
        print(f"  a build is running on this release now (process {running}): the stages below are as it has left "
              "them so far")
    statuses = []
    for check in plan.checks:
        status, detail = describe(check.state, check.fingerprint, check.parts, check.problem)
        print(f"  {check.stage.name:14} {status:8} {detail}")
        statuses.append(status)
    return 1 if DAMAGED in statuses else 0  # a script (CI) that checks a release before using it stops here
