"""``kobbq status``: each stage of a pipeline's build folder: done, waiting, stale, failed, or not run."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import STAGES, describe, load_pipeline, read_state
from core.release_folder import release_problem
from tasks.build.pipeline import context, current_fingerprints


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="the state of every pipeline stage in a build folder",
                                   description="Show each stage of the pipeline: done (counts, when), waiting "
                                               "(for what), stale (inputs changed since), failed (why), damaged "
                                               "(the release deleted or changed since), or not run.")
    parser.add_argument("--pipeline", type=Path, required=True, help="the pipeline file")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR, help="build folder (default: %(default)s)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    ctx = context(load_pipeline(args.pipeline), args.out)
    prints = current_fingerprints(ctx)
    print(f"pipeline {args.pipeline} -> {ctx.folder.path}")
    for stage in STAGES:
        problem = release_problem(ctx.folder.path) if stage == STAGES[-1] else None  # the release is there, intact
        status, detail = describe(read_state(ctx.states, stage), prints.get(stage), problem)
        print(f"  {stage:14} {status:8} {detail}")
    return 0
