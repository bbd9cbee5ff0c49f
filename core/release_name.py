"""A release's name: one plain folder name, the same rule for ``--name``, a pipeline file's ``name`` and a profile's
``[release] name`` (``core.profile.ReleaseName``)."""

from __future__ import annotations

from core.errors import UserError

RESERVED_PREFIXES = (".",)  # hidden names: the staging and retired folders of a publication start with "."
MAX_NAME_BYTES = 200  # a release name's length in UTF-8 bytes: room for its lock, staging and .work names (255)


def check_release_name(name: str) -> str:
    """A release name is one plain folder name: never ``.``, ``..``, a path, a hidden name, a control character
    (a newline would split every line that names it) or a name too long for the files beside it, so the release
    is written exactly at ``<out>/<name>`` and nowhere else."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(RESERVED_PREFIXES) \
            or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UserError(f"release name {name!r} is not a plain folder name (no '/', '.', '..', leading '.' or "
                        "control character); give a name such as KoBBQ, and --out for the folder it goes in")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise UserError(f"release name of {len(name.encode())} bytes: at most {MAX_NAME_BYTES} (the files beside the "
                        "release add to it, and a file name has at most 255); give a shorter --name")
    return name
