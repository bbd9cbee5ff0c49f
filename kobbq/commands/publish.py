"""``kobbq publish --to-hub REPO``: upload a release folder to the Hugging Face Hub as a dataset repository."""

from __future__ import annotations

import argparse
from pathlib import Path

from kobbq.arguments import release_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "publish", help="upload a release folder to the Hugging Face Hub (its README.md is the dataset card)",
        description="Upload the files of a release folder that its manifest lists to a Hugging Face Hub dataset "
                    "repository (created if it does not exist), in one commit; files you keep in the folder "
                    "(notes, a .git) are listed as kept and never uploaded, with huggingface_hub. The folder's README.md is the "
                    "dataset card: one config per category plus 'all', so datasets.load_dataset(REPO, CONFIG) "
                    "reads it as it reads the folder. Only an intact release (every file as its manifest "
                    "records it) is uploaded. The token is HF_TOKEN or `hf auth login`'s; HF_ENDPOINT chooses "
                    "another Hub.")
    parser.add_argument("--release", type=Path, default=None,
                        help="release folder (default: build/KoBBQ-example, the embedded example's, said when taken)")
    parser.add_argument("--to-hub", required=True, metavar="REPO", help="the dataset repository, OWNER/NAME")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded; no token, no network")
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--message", default=None, help="the commit message")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tasks.release.hub import plan_upload, publish  # huggingface_hub: not for --help

    upload = plan_upload(release_of(args), args.to_hub)
    if args.dry_run:
        print(upload.render())
        return 0
    print(f"published: {publish(upload, private=args.private, message=args.message)}")
    return 0
