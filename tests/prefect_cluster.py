"""A Prefect cluster on 127.0.0.1 for the distributed tests and benchmark: server, PostgreSQL, workers.

``Cluster`` starts every process in a session of its own and, on leaving (a failure included),
stops each one and all its descendants (a worker's flow-run processes too), so nothing
outlives a test. Each worker gets a home and a working folder of its own, as a worker on
another machine would. ``lose(worker)`` SIGKILLs a worker with everything it started: a
machine gone, with no chance to report anything.

The server is started as docs/several-machines.md starts it: concurrency leases kept on disk
(so a restart, ``restart_server``, keeps the slots' holders), and with ``auth`` Prefect's own
basic authentication (``PREFECT_SERVER_API_AUTH_STRING``; every client of the cluster then
sends ``PREFECT_API_AUTH_STRING``).

PostgreSQL (``start_postgres``) uses Debian's binaries (``/usr/lib/postgresql/<N>/bin``); it
refuses to run as root, so as root it runs as the ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import psutil

PREFECT = Path(sys.executable).with_name("prefect")
QUIET = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false",
         "PREFECT_SERVER_LOGGING_LEVEL": "WARNING", "PREFECT_LOGGING_LEVEL": "WARNING"}
PORT_ATTEMPTS = 5  # a server given a port found free may find it taken by then: it tries another
LEASES_ON_DISK = {"PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect.server.concurrency.lease_storage.filesystem"}


def free_port() -> int:
    """A port free now, for a process that can only be given one (another process may take it before it binds:
    ``listening_port`` tells whether the one that listens there is ours)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening_port(pid: int) -> int | None:
    """The TCP port ``pid`` or one of its descendants listens on (None: not yet, or gone)."""
    try:
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return None
    for process in tree:
        with suppress(psutil.Error):
            for connection in process.net_connections(kind="tcp"):
                if connection.status == psutil.CONN_LISTEN:
                    return connection.laddr.port
    return None


def descendants(pid: int) -> list[int]:
    """Every process started by ``pid``, however deep."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (stopped first, so none starts another meanwhile)."""
    tree = [pid] + descendants(pid)
    for each in tree:
        try:
            os.kill(each, signal.SIGSTOP)
        except ProcessLookupError:
            pass
    for each in tree + descendants(pid):
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass


def postgres_binaries() -> Path | None:
    """Debian's PostgreSQL binaries folder (the newest version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    postgres = shutil.which("postgres")
    return Path(postgres).resolve().parent if postgres else None


@dataclass
class Worker:
    name: str
    process: subprocess.Popen


@dataclass
class Cluster:
    """Processes started for one test; ``close`` (or leaving the ``with``) stops them all."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    api_url: str = ""
    server: subprocess.Popen | None = None
    server_env: dict[str, str] = field(default_factory=dict)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def machines(self, root: Path) -> "Cluster":
        """Machines of their own (workers, commands, logs under ``root``) on this cluster's server: closing them stops
        what was started through them, not the server (``stop_server`` and ``restart_server`` are this cluster's)."""
        return Cluster(root, env=self.env, api_url=self.api_url)

    def start(self, command: list[str], env: dict[str, str], cwd: Path, log: Path, **kwargs) -> subprocess.Popen:
        with log.open("ab") as handle:
            process = subprocess.Popen(command, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT,
                                       start_new_session=True, **kwargs)
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                for pid in [process.pid] + descendants(process.pid):
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        deadline = time.monotonic() + 15
        for process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            if process.poll() is None or descendants(process.pid):
                kill_tree(process.pid)
                process.wait(timeout=10)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)

    def start_postgres(self) -> str:
        """A throwaway PostgreSQL on 127.0.0.1 (trust auth, no fsync); returns Prefect's connection URL."""
        binaries = postgres_binaries()
        if binaries is None:
            raise FileNotFoundError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        user = "postgres" if _user_exists("postgres") else "nobody"
        as_user = {"user": user} if os.geteuid() == 0 else {}
        data = Path(tempfile.mkdtemp(prefix="kobbq-pg-"))  # not under a root-only temporary folder
        self.folders.append(data)
        if as_user:
            entry = pwd.getpwnam(user)
            os.chown(data, entry.pw_uid, entry.pw_gid)
            as_user["group"] = entry.pw_gid
            as_user["extra_groups"] = []
        log = self.root / "postgres.log"
        subprocess.run([str(binaries / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], check=True, capture_output=True, cwd=data, timeout=120, **as_user)
        for _ in range(PORT_ATTEMPTS):
            port, logged = free_port(), log.stat().st_size if log.exists() else 0
            process = self.start([str(binaries / "postgres"), "-D", str(data / "db"), "-p", str(port), "-k",
                                  str(data), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                                  "max_connections=200"],
                                 {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}, data, log, **as_user)
            if _listens(process, port, log, logged):
                return f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
        raise RuntimeError(f"postgres found no free port in {PORT_ATTEMPTS} tries: {log.read_text()[-2000:]}")

    def start_server(self, database_url: str | None = None, auth: str | None = None) -> str:
        """``prefect server start`` on a free port (SQLite in its home, or ``database_url``); returns the API URL.

        With ``auth`` (``user:password``) the API refuses every request without it.
        """
        home = self.root / "server-home"
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **QUIET, **LEASES_ON_DISK, "PREFECT_HOME": str(home)}
        for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_API_AUTH_STRING"):
            env.pop(name, None)
        if database_url:
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = database_url
        if auth:
            env["PREFECT_SERVER_API_AUTH_STRING"] = auth
        self.server_env = env
        self._run_server(port=0)  # the system picks a free port as the server binds: no port taken meanwhile
        self.env = {**os.environ, **QUIET, "PREFECT_API_URL": self.api_url}
        self.env.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
        self.env.pop("PREFECT_API_AUTH_STRING", None)
        if auth:
            self.env["PREFECT_API_AUTH_STRING"] = auth
        return self.api_url

    def _run_server(self, port: int) -> None:
        """``prefect server start`` on ``port`` (0: one the system picks, read from the listening socket)."""
        home = Path(self.server_env["PREFECT_HOME"])
        log = self.root / "server.log"
        self.server = self.start([str(PREFECT), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                                 self.server_env, home, log)

        def exited() -> RuntimeError | None:
            return RuntimeError(f"prefect server exited: {log.read_text()[-3000:]}") if self.server.poll() is not None \
                else None

        deadline = time.monotonic() + 180
        while not (bound := listening_port(self.server.pid)) or (port and bound != port):
            if error := exited():
                raise error
            if time.monotonic() > deadline:
                raise TimeoutError(f"prefect server did not listen: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        self.api_url = f"http://127.0.0.1:{bound}/api"
        wait_healthy(self.api_url, exited)

    def stop_server(self) -> None:
        """The server goes away (SIGKILL: no goodbye to its clients); its database and leases stay."""
        kill_tree(self.server.pid)
        self.server.wait(timeout=10)

    def restart_server(self) -> None:
        """The same server back on the same port, with the same database and lease storage."""
        self._run_server(int(self.api_url.rsplit(":", 1)[1].split("/")[0]))

    def client_env(self, name: str) -> dict[str, str]:
        """The environment of a machine called ``name``: its own Prefect home, the server's URL."""
        home = self.root / name / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {**self.env, "PREFECT_HOME": str(home)}

    def prefect(self, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """A ``prefect`` CLI command against the server (fails the caller on a non-zero exit)."""
        result = subprocess.run([str(PREFECT), *args], env=self.client_env("cli"), cwd=cwd or self.root,
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"prefect {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def start_worker(self, name: str, pool: str = "kobbq", limit: int = 2, extra_env: dict | None = None) -> Worker:
        """A process worker in a folder of its own (its runs' code comes from the deployment's pull step)."""
        folder = self.root / name
        env = {**self.client_env(name), **(extra_env or {})}
        process = self.start([str(PREFECT), "worker", "start", "--pool", pool, "--name", name, "--limit", str(limit),
                              "--type", "process"], env, folder, self.root / f"{name}.log")
        return Worker(name, process)

    def start_script(self, name: str, script: str, extra_env: dict | None = None) -> subprocess.Popen:
        """A shell script run as a machine's start-up script would be: no terminal, ``sh``, in the machine's folder."""
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        env = {**self.client_env(name), **(extra_env or {})}
        return self.start(["sh", "-c", script], env, folder, self.root / f"{name}.log", stdin=subprocess.DEVNULL)

    def lose(self, worker: Worker) -> None:
        """The worker's machine is gone: SIGKILL the worker and every process it started."""
        kill_tree(worker.process.pid)
        worker.process.wait(timeout=10)


def _listens(process: subprocess.Popen, port: int, log: Path, logged: int) -> bool:
    """Until PostgreSQL listens on ``port`` (True), or exits because another process took the port (False); what
    it logged from byte ``logged`` on is this start's."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if listening_port(process.pid) == port:
            return True
        if process.poll() is not None:
            said = log.read_bytes()[logged:].decode(errors="replace")
            if "already in use" in said:
                return False
            raise RuntimeError(f"postgres exited with {process.returncode}: {said[-2000:]}")
        time.sleep(0.3)
    raise TimeoutError("postgres did not start")


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def wait_healthy(url: str, failed=lambda: None, seconds: float = 180) -> None:
    """Until the Prefect server at ``url`` answers its health check; ``failed()`` returns the error to raise at
    once (its process exited), else a falsy value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        error = failed()
        if error:
            raise error
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"no Prefect server answered at {url}")
