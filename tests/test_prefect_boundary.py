"""The boundary to Prefect, through real servers on 127.0.0.1: a server that is not there, not Prefect, refuses
the auth string or dies mid-build, or a temporary server that does not start in time, is one line naming the URL,
what happened and what to do, with nothing half-published; ``kobbq status`` starts nothing and is not affected; with
no server configured the first build starts a background server and the next one reuses it."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from prefect_cluster import Cluster

BUILD = [sys.executable, "-m", "kobbq", "build", "--quiet"]


def kobbq(args: list[str], env: dict[str, str], out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*args, "--out", str(out)], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def assert_one_line(result: subprocess.CompletedProcess, *said: str) -> None:
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr
    for words in said:
        assert words in result.stderr, result.stderr


def nothing_published(out: Path) -> None:
    assert not (out / "KoBBQ-example").exists() and not list(out.glob(".staging-*")) and not list(out.glob(".retired-*"))


@pytest.mark.flow
def test_a_dead_port_is_one_line_and_status_is_not_affected(tmp_path, closed_port):
    url = f"http://127.0.0.1:{closed_port()}/api"
    env = {**os.environ, "PREFECT_API_URL": url, "PREFECT_HOME": str(tmp_path / "home")}
    result = kobbq(BUILD, env, tmp_path / "out")
    assert_one_line(result, f"no Prefect server answers at {url}", "prefect server start", "unset PREFECT_API_URL")
    nothing_published(tmp_path / "out")
    status = kobbq([sys.executable, "-m", "kobbq", "status", "--pipeline", "templates_raw/example/pipeline.toml"],
                   env, tmp_path / "out")
    assert status.returncode == 0 and "not run" in status.stdout and status.stderr == "", status.stderr


class NotPrefect(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b"<html>a web site</html>"
        self.send_response(200 if self.path.endswith("/health") else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.flow
def test_a_server_that_is_not_prefect_is_one_line(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotPrefect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        result = kobbq(BUILD, {**os.environ, "PREFECT_API_URL": url, "PREFECT_HOME": str(tmp_path / "home")},
                       tmp_path / "out")
    finally:
        server.shutdown()
    assert_one_line(result, f"{url} answers, but not as a Prefect API (its /health: HTTP 200)",
                    "correct PREFECT_API_URL")
    nothing_published(tmp_path / "out")


@pytest.mark.flow
def test_a_temporary_server_that_does_not_start_in_time_is_one_line(tmp_path):
    env = {**os.environ, "KOBBQ_PREFECT_SERVER": "temporary", "PREFECT_HOME": str(tmp_path / "home"),
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "1"}  # a first start makes its database: seconds
    env.pop("PREFECT_API_URL", None)
    result = kobbq(BUILD, env, tmp_path / "out")
    assert_one_line(result, "Prefect's temporary server did not start within 1 s "
                            "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)", "set it higher")
    nothing_published(tmp_path / "out")


@pytest.mark.flow
def test_a_wrong_auth_string_and_a_server_killed_mid_build_are_one_line(tmp_path):
    with Cluster(tmp_path / "cluster") as cluster:
        cluster.root.mkdir()
        url = cluster.start_server(auth="kobbq:right")
        env = cluster.client_env("cli")
        wrong = kobbq(BUILD, {**env, "PREFECT_API_AUTH_STRING": "kobbq:wrong"}, tmp_path / "wrong")
        assert_one_line(wrong, f"the Prefect server at {url} refused this command (HTTP 401",
                        "PREFECT_API_AUTH_STRING is not the server's auth string")
        nothing_published(tmp_path / "wrong")

        out = tmp_path / "killed"
        build = subprocess.Popen([*BUILD[:-1], "--out", str(out)], cwd=PROJECT_ROOT, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for line in build.stderr:  # the progress lines: the server goes when the first stage is done
            if "labels: done" in line:
                cluster.stop_server()
                break
        stdout, stderr = build.communicate(timeout=600)
    errors = [line for line in stderr.splitlines() if not line.startswith("[")]
    assert build.returncode == 1 and len(errors) == 1, stderr
    assert errors[0].startswith(f"error: no Prefect server answers at {url}") and "during the build" in errors[0]
    nothing_published(out)


@pytest.mark.flow
def test_with_no_server_configured_the_first_build_starts_one_in_the_background_and_the_next_reuses_it(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "PREFECT_HOME": str(home)}
    for name in ("PREFECT_API_URL", "KOBBQ_PREFECT_SERVER"):
        env.pop(name, None)
    try:
        first = kobbq(BUILD[:-1], env, tmp_path / "out")
        assert first.returncode == 0, first.stderr
        started = [line for line in first.stderr.splitlines() if "background" in line]
        assert len(started) == 1 and "`prefect server stop` stops it" in started[0], first.stderr
        assert "KOBBQ_PREFECT_SERVER=temporary" in started[0]
        server = (home / "server.pid").read_text(encoding="utf-8")
        second = kobbq([*BUILD[:-1], "--force"], env, tmp_path / "out")
        assert second.returncode == 0 and "background one starts" not in second.stderr, second.stderr
        # Reused, not started again (shown by the server, not by a time: a build alone takes minutes at load 10): the
        # same server process, and both builds' flow runs on it.
        assert (home / "server.pid").read_text(encoding="utf-8") == server
        url = json.loads((home / "kobbq-server.json").read_text(encoding="utf-8"))["url"]
        request = urllib.request.Request(f"{url}/flow_runs/filter", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert [run["state_type"] for run in json.loads(response.read())] == ["COMPLETED", "COMPLETED"]
    finally:
        stopped = subprocess.run([str(Path(sys.executable).with_name("prefect")), "server", "stop"], env=env,
                                 capture_output=True, text=True, timeout=120)
    assert "stopped" in stopped.stdout.lower(), stopped.stdout + stopped.stderr
