"""Which Prefect server a command's flow run goes to, found answering before the flow run starts: ``PREFECT_API_URL``'s,
else this session's background server, else (``KOBBQ_PREFECT_SERVER=temporary``) Prefect's temporary one
(docs/guides/server-or-pool.md). No Prefect import here until a flow run is about to start.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import httpx

from core import console
from core.atomic import check_writable, write_text
from core.errors import UserError

OPT_OUT = "KOBBQ_PREFECT_SERVER"  # "temporary": a temporary server per command, none left running
RECORD = "kobbq-server.json"
PID_FILE = "server.pid"  # Prefect's record of its background server (``prefect server stop`` reads it)
START_TIMEOUT = 90.0


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def api_setting(name: str) -> str:
    """``PREFECT_API_<NAME>`` (``url``, ``auth_string``, ``key``) from the environment, else the active Prefect
    profile ("" for none)."""
    value = os.environ.get(f"PREFECT_API_{name.upper()}", "")
    if value:
        return value
    from prefect.settings import get_current_settings  # the active profile: Prefect reads it

    found = getattr(get_current_settings().api, name)
    return str(found.get_secret_value() if hasattr(found, "get_secret_value") else found or "")


# The probe that words a failure Prefect's client has already waited out (the server went during the command).
AFTER_A_FAILURE_SECONDS = 5.0


def problem(url: str, timeout: float | None = None, unset: str = "to have the build start one in the background"
            ) -> str | None:
    """What is wrong with the Prefect API at ``url``, in one line that says what to do (``unset``: what unsetting
    PREFECT_API_URL does); None when it answers. /health is open even with authentication (anything but ``true`` is
    another server); /admin/version checks the auth string and the version. ``timeout``: Prefect's own unless given."""
    if timeout is None:
        from prefect.settings import PREFECT_API_REQUEST_TIMEOUT

        timeout = PREFECT_API_REQUEST_TIMEOUT.value()
    try:
        health = httpx.get(f"{url.rstrip('/')}/health", timeout=timeout)
        answer = httpx.get(f"{url.rstrip('/')}/admin/version", headers=auth_headers(), timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        return (f"no Prefect server answers at {url} ({type(error).__name__}: {error}): start it (`prefect server "
                f"start`), or unset PREFECT_API_URL {unset}")
    for response in (health, answer):
        if response.status_code >= 500:
            return (f"the Prefect server at {url} answers HTTP {response.status_code} ({response.reason_phrase}): "
                    "it is starting, stopping or failing (its database?): look at its log, then run the same command "
                    "again")
    correct = f"correct PREFECT_API_URL (a Prefect server's address ends in /api) or unset it {unset}"
    if health.text.strip() != "true":
        return f"{url} answers, but not as a Prefect API (its /health: HTTP {health.status_code}): {correct}"
    if answer.status_code in (401, 403):
        fix = ("PREFECT_API_AUTH_STRING is not the server's auth string: set it to the content of the server's "
               "PREFECT_SERVER_API_AUTH_STRING") if api_setting("auth_string") else (
               "set PREFECT_API_AUTH_STRING to the server's auth string")
        return (f"the Prefect server at {url} refused this command (HTTP {answer.status_code} "
                f"{answer.reason_phrase}): {fix}")
    version, ours = answer.text.strip().strip('"'), metadata.version("prefect")
    if answer.status_code != 200 or not version[:1].isdigit():
        return f"{url} answers, but not as a Prefect API (its /admin/version: HTTP {answer.status_code}): {correct}"
    if version.split(".")[0] != ours.split(".")[0]:
        return (f"the Prefect server at {url} runs Prefect {version}, this command {ours}: major versions must match: "
                f"install the server's version here (pip install prefect=={version})")
    return None


def auth_headers() -> dict[str, str]:
    """The header Prefect's client sends: the auth string (a self-hosted server's), else the API key."""
    auth, key = api_setting("auth_string"), api_setting("key")
    if auth:
        return {"Authorization": f"Basic {base64.b64encode(auth.encode()).decode()}"}
    return {"Authorization": f"Bearer {key}"} if key else {}


def lost_api(error: BaseException | None) -> bool:
    """An error that says the Prefect API could not be reached (anywhere in its chain)."""
    while error is not None:
        if "Failed to reach API" in str(error) or type(error).__module__.startswith(("httpx", "httpcore")):
            return True
        error = error.__cause__ or error.__context__
    return False


@contextmanager
def connect() -> Iterator[None]:
    """The block's flow run goes to a server that answers; losing it during the block is one line. The caller has
    checked Prefect's home (``check_prefect_home``) before importing Prefect."""
    from prefect.settings import (PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES,
                                  PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, temporary_settings)

    url = api_setting("url")
    if not url and os.environ.get(OPT_OUT) == "temporary":
        console.step(f"Prefect: a temporary server for this command (5-20 s), as {OPT_OUT}=temporary asks")
        try:
            yield
        except RuntimeError as error:  # Prefect's own words when its temporary server does not answer in time
            if not str(error).startswith("Timed out while attempting to connect to ephemeral Prefect API server"):
                raise
            waited = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS  # what Prefect waited, from wherever it was set
            raise UserError(f"Prefect's temporary server did not start within {waited.value()} s "
                            f"({waited.name}): on a busy machine set it higher, or leave {OPT_OUT} unset so "
                            "that one server started in the background serves every command") from error
        return
    if url and (found := problem(url)):
        raise UserError(found)
    url = url or background_server()
    try:  # a server gone during the build is said within seconds, not after minutes of retries
        with temporary_settings(updates={PREFECT_API_URL: url, PREFECT_CLIENT_MAX_RETRIES: 1}):
            yield
    except Exception as error:
        if not lost_api(error):
            raise
        said = problem(url, AFTER_A_FAILURE_SECONDS) or f"the Prefect server at {url} stopped answering"
        raise UserError(f"{said} (during the build: a release is published whole or not at all; run the command "
                        "again)") from error


def check_prefect_home() -> None:
    """Prefect writes its database and settings in its home: one that cannot be written stops here in one line,
    not after Prefect's start-up times out."""
    try:
        check_writable(prefect_home())
    except UserError:
        raise UserError("Prefect's home cannot be written (Prefect keeps its database and settings there); set "
                        "PREFECT_HOME to a folder that can be, or PREFECT_API_URL to a running server",
                        prefect_home()) from None


def background_server() -> str:
    """The address of this session's background server: the one recorded, when it answers (as patiently as Prefect's
    client: a slow answer is a busy server other builds may be using, not a dead one to stop), else a new one."""
    home = prefect_home()
    try:
        url = str(json.loads((home / RECORD).read_text(encoding="utf-8"))["url"])
    except (OSError, ValueError, KeyError, TypeError):
        url = ""
    if url and problem(url) is None:
        return url
    if (home / PID_FILE).exists():  # a background server that does not answer at the recorded address
        subprocess.run([sys.executable, "-m", "prefect", "server", "stop"], capture_output=True, timeout=60)
    return start_server(home)


def start_server(home: Path) -> str:
    """``prefect server start --background`` on a free port; its address once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api"
    console.step(f"Prefect: no server configured (PREFECT_API_URL), so a background one starts at {url} and later "
                 f"commands reuse it (`prefect server stop` stops it; {OPT_OUT}=temporary starts a temporary one per "
                 "command instead)")
    # Without its telemetry, which would write to the pipes its starter has closed, the server stays up.
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    started = subprocess.run([sys.executable, "-m", "prefect", "server", "start", "--background", "--host",
                              "127.0.0.1", "--port", str(port)], env=env, capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        said = (started.stdout + started.stderr).strip().splitlines()
        raise UserError(f"Prefect's background server did not start ({said[-1] if said else started.returncode}); "
                        f"`prefect server stop` ends one left behind, or set {OPT_OUT}=temporary")
    deadline = time.monotonic() + START_TIMEOUT
    while problem(url, timeout=2.0) is not None:
        if time.monotonic() > deadline:
            raise UserError(f"Prefect's background server did not answer at {url} within {START_TIMEOUT:.0f} s; "
                            f"`prefect server stop` ends it, or set {OPT_OUT}=temporary")
        time.sleep(0.2)
    write_text(home / RECORD, json.dumps({"url": url}) + "\n")
    return url
