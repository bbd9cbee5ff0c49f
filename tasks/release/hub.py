"""Publishing a release folder to the Hugging Face Hub as a dataset repository (``docs/reference/release-folder.md``):
only the files its manifest lists, from an intact release (each file's sha256 as recorded), checked before any
network call; what a user keeps in the folder is listed as kept and never uploaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2  # huggingface_hub 2.x's HTTP client: its transport errors (refused, DNS, timeout) are not OSError
from huggingface_hub import CommitOperationAdd, HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled
from huggingface_hub.utils import validate_repo_id

from core.errors import UserError
from core.release_folder import CARD, MANIFEST, changed_files, listed_files, read_manifest, user_entries

REPO_TYPE = "dataset"


@dataclass(frozen=True)
class Upload:
    folder: Path
    repo_id: str
    files: list[tuple[str, int]]  # path in the repository, bytes: the release's files as its manifest lists them
    kept: list[str] = field(default_factory=list)  # what a user added in the folder: never uploaded

    @property
    def size(self) -> int:
        return sum(size for _, size in self.files)

    def render(self) -> str:
        lines = [f"would upload {len(self.files)} files ({self.size / 1e6:.1f} MB) from {self.folder} to the "
                 f"dataset repository {self.repo_id}:"]
        lines += [f"  {path}  ({size:,} bytes)" for path, size in self.files]
        if self.kept:
            lines.append(f"kept in the folder, not uploaded (the build did not write them): {', '.join(self.kept)}")
        return "\n".join(lines)


def plan_upload(folder: Path, repo_id: str) -> Upload:
    """What ``publish`` would upload: the files of an intact release folder that its manifest lists."""
    folder = Path(folder)
    check_repo_id(repo_id)
    manifest = read_manifest(folder)
    if manifest is None:
        raise UserError(f"not a release folder (no {MANIFEST}); build it first", folder)
    outputs = manifest.get("outputs")
    if not (folder / CARD).exists() and not (isinstance(outputs, dict) and CARD in outputs):
        raise UserError(f"this release has no dataset card ({CARD}): it was built by an older version; "
                        "rebuild it (kobbq build --force)", folder)  # a card its manifest lists is a lost file
    changed = changed_files(folder, manifest)
    if changed:
        raise UserError(f"{len(changed)} file(s) differ from what the build wrote ({', '.join(changed[:5])}); "
                        "rebuild the release before publishing it", folder)
    files = [(name, (folder / name).stat().st_size) for name in sorted(listed_files(manifest))]
    return Upload(folder, repo_id, files, user_entries(folder, manifest))


def check_repo_id(repo_id: str) -> str:
    """OWNER/NAME as the Hub accepts it (``huggingface_hub``'s own check: letters, digits, '-', '_', '.', at most 96
    characters a part, no '--' or '..'), so a dry run never promises an upload the Hub would refuse."""
    problem = None if repo_id.count("/") == 1 else "it must be OWNER/NAME, with one '/'"
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        problem = problem or f"huggingface_hub: {str(exc).split(': ' + chr(39))[0]}"
    if problem:
        shown = repr(repo_id) if len(repo_id) <= 120 else f"{repo_id[:120]!r}... ({len(repo_id)} characters)"
        raise UserError(f"{shown} is not a Hub repository name ({problem}); write it as OWNER/NAME with letters, "
                        "digits, '-', '_' or '.'")
    return repo_id


def publish(upload: Upload, private: bool = False, message: str | None = None,
            progress: Callable[[str], None] = print) -> str:
    """Create the dataset repository if needed and upload the folder in one commit; the commit's URL."""
    token = get_token()
    if not token:
        raise UserError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (kobbq publish --dry-run "
                        "lists what would be uploaded without one)")
    api = HfApi(token=token)
    progress(f"uploading {len(upload.files)} files ({upload.size / 1e6:.1f} MB) to {api.endpoint}, "
             f"dataset repository {upload.repo_id} ...")
    try:
        api.create_repo(upload.repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        commit = api.create_commit(repo_id=upload.repo_id, repo_type=REPO_TYPE,
                                   operations=[CommitOperationAdd(path, upload.folder / path) for path, _ in upload.files],
                                   commit_message=message or f"Release {upload.folder.name} (kobbq-builder)")
    except HFValidationError as exc:  # a name check_repo_id let through and the client refused
        raise UserError(f"huggingface_hub refused the upload to {upload.repo_id!r}: {exc}; nothing was uploaded") from None
    except OfflineModeIsEnabled:
        raise UserError("HF_HUB_OFFLINE is set: nothing was uploaded (unset it to publish)") from None
    except HfHubHTTPError as exc:
        raise UserError(f"the Hub refused the upload to {upload.repo_id}: {str(exc).splitlines()[0]}") from None
    except (httpx2.TransportError, OSError) as exc:
        raise UserError(f"cannot reach the Hub ({api.endpoint}): {exc}; nothing was published") from None
    return str(commit.commit_url)
