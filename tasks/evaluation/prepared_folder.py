"""An output folder of ``kobbq eval`` (prepare, score, export-lm-eval) is replaced whole or not at all, and never loses
a user's file: everything is written into a staging folder beside it (``staged``: on the same file system, removed on
a signal or an error, or by the next run when a killed process left it), then moved in (``move_in``), the file that
makes the folder complete last; a new preparation removes only the previous one's files that ``prepared.json`` lists.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import interrupt
from core.atomic import check_not_a_file
from core.errors import UserError, os_errno
from core.release_folder import STAGING_PREFIX
from core.text_files import read_json
from tasks.release.publish import dead_folders, removed_on_error, staging_folder

SUMMARY = "prepared.json"  # written last; lists the folder's files ("files")


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """An empty staging folder for ``out``, removed on an error or a signal (``out`` untouched); an OS error (a full
    disk) names the file as it would be in ``out``."""
    out = check_not_a_file(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(out)
    for folder in [*dead_folders(out, STAGING_PREFIX), staging]:  # left by a killed preparation (or this pid's)
        shutil.rmtree(folder, ignore_errors=True)

    def named(exc: OSError) -> OSError:
        name = str(exc.filename or "")
        where = out / Path(name).relative_to(staging) if name.startswith(f"{staging}{os.sep}") else out
        return OSError(os_errno(exc), exc.strerror or str(exc), str(where))

    with removed_on_error(staging, named):
        yield staging


def read_summary(prepared: Path) -> dict:
    """The ``prepared.json`` of a folder `kobbq eval prepare` wrote (scoring, export and ``run --score`` read it)."""
    path = prepared / SUMMARY
    if not path.exists():
        raise UserError("not a prepared folder (no prepared.json; write one with `kobbq eval prepare`)", prepared)
    summary = read_json(path, "prepared summary")
    if not isinstance(summary, dict):
        raise UserError("not a prepared summary (expected a JSON object): prepare the folder again", path)
    return summary


def folder_files(folder: Path) -> list[str]:
    """Every file under ``folder``, as relative POSIX paths, sorted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def previous_files(out: Path) -> set[str]:
    """The files the previous preparation of ``out`` wrote: those its ``prepared.json`` lists (or, written before
    it listed them, the ones its release, split and prompts name); none when there is no readable one."""
    try:
        summary = json.loads((out / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(summary, dict):
        return set()
    if isinstance(summary.get("files"), list):
        return {str(name) for name in summary["files"]}
    stem = f"{summary.get('release_name')}_{summary.get('split')}"
    upstream = {f"{stem}/{stem}_evaluation_{prompt}.{kind}" for prompt in summary.get("prompts") or []
                for kind in ("tsv", "json")}
    return {"requests.jsonl", "prompts.tsv", SUMMARY} | upstream


def move_in(staging: Path, out: Path, last: str) -> list[Path]:
    """Move every staged file into ``out``, ``last`` last (the folder is not complete without it), and remove the
    staging folder: renames on one file system, so a full disk cannot stop them halfway."""
    written = folder_files(staging)
    with interrupt.critical():
        (out / last).unlink(missing_ok=True)
        for name in [n for n in written if n != last] + [last] * (last in written):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, out / name)
    shutil.rmtree(staging, ignore_errors=True)
    return [out / name for name in written]


def publish_prepared(staging: Path, out: Path) -> None:
    """Move the staged files into ``out`` (``prepared.json`` last: not a prepared folder until then), then remove
    the previous preparation's files that were not written again."""
    stale = previous_files(out) - set(folder_files(staging))
    top = out.resolve()
    move_in(staging, out, SUMMARY)
    with interrupt.critical():
        for name in sorted(stale):
            path = out / name
            if path.is_file() and top in path.resolve().parents:
                path.unlink()
                if path.parent != out and path.parent.is_dir() and not any(path.parent.iterdir()):
                    path.parent.rmdir()
