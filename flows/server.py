"""Which Prefect server a command's flow run goes to."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import console
from core.atomic import check_writable
from core.errors import UserError

FALLBACK = ("Prefect: no server configured (PREFECT_API_URL), so this command starts a temporary one (5-20 s); "
            "`prefect server start --background` and `prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api` "
            "start one for every command")


def server_url() -> str:
    """The Prefect API this process will use ("" for none: a temporary one), from the environment or the active
    Prefect profile."""
    url = os.environ.get("PREFECT_API_URL", "")
    if url:
        return url
    from prefect.settings import get_current_settings

    return str(get_current_settings().api.url or "")


def check_prefect_home() -> None:
    """Prefect writes its database and settings in its home: one that cannot be written stops here in one line,
    not after Prefect's start-up times out."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        check_writable(home)
    except UserError:
        raise UserError("Prefect's home cannot be written (Prefect keeps its database and settings there); set "
                        "PREFECT_HOME to a folder that can be, or PREFECT_API_URL to a running server", home) from None


@contextmanager
def connect() -> Iterator[None]:
    check_prefect_home()
    if not server_url():
        console.step(FALLBACK)
    yield
