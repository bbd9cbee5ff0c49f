"""The distributed evaluation's rules that need no Prefect server: a unit's identity, its lease in a real
answer cache, what a lost run is, the code pin against a real git repository.

The take-over, the cancellation and the outages run against a real cluster in
``tests/test_distributed_eval.py`` (slow).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.errors import UserError

# tasks.evaluation.pool imports no Prefect, but the openai client: each test imports what it uses, so that only the
# pytest-xdist worker that runs these tests pays it, not every worker when it collects this file.


def test_a_units_key_is_what_decides_its_answers_not_how_they_are_asked() -> None:
    from tasks.evaluation.pool import RunUnit, evaluation_key

    unit = RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite")
    how = RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite", concurrency=16,
                  key_env="OTHER_KEY", max_retries=0, timeout=5.0, code_commit="a" * 40)
    assert unit.key == how.key
    others = [RunUnit("/p", "http://10.0.0.5:8000/v1", "model-b", 1, "/out/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 2, "/out/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/other/answer_cache.sqlite"),
              RunUnit("/p", "http://10.0.0.5:8000/v1", "model-a", 1, "/out/answer_cache.sqlite", max_tokens=64)]
    assert len({unit.key} | {o.key for o in others}) == 5
    assert evaluation_key([unit.key, others[0].key]) == evaluation_key([others[0].key, unit.key])


def test_the_units_client_gets_the_commands_retries_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.evaluation.pool import RunUnit

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    unit = RunUnit("/p", "http://127.0.0.1:1/v1", "model-a", 1, "/c.sqlite", max_retries=0, timeout=7.5)
    client = unit.model_client()
    assert (client.max_retries, client.timeout_seconds) == (0, 7.5)


def test_a_lost_run_whose_answers_are_all_in_is_completed_not_crashed() -> None:
    from tasks.evaluation.pool import lost_state

    finished, holding, starting = lost_state(True, True, 130), lost_state(False, True, 130), lost_state(False, False, 610)
    assert finished[0] and "every answer of the unit is in the answer cache" in finished[1]
    assert not holding[0] and "lease was not renewed for 130 s" in holding[1]
    assert not starting[0] and "did not start answering within 610 s" in starting[1]


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "one")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "tag", "-a", "v1", "-m", "v1")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "two")
    return folder


def test_the_ref_is_resolved_to_the_commit_it_names_now(repository: Path) -> None:
    from tasks.evaluation.pool import resolve_ref

    first, second = git(repository, "rev-parse", "v1^{commit}"), git(repository, "rev-parse", "main")
    assert resolve_ref(str(repository), "main") == second
    assert resolve_ref(str(repository), "v1") == first  # an annotated tag: its commit, not the tag object
    assert resolve_ref(str(repository), first.upper()) == first  # a commit is taken as it is
    with pytest.raises(UserError, match="'nope' is not a branch or tag"):
        resolve_ref(str(repository), "nope")
    with pytest.raises(UserError, match="cannot read"):
        resolve_ref(str(repository / "missing"), "main")


def test_a_unit_refuses_code_other_than_the_pinned_commit(repository: Path) -> None:
    from tasks.evaluation.pool import check_code

    head = git(repository, "rev-parse", "HEAD")
    check_code(head, repository)
    check_code(None, repository)  # nothing pinned (code outside git): nothing to compare
    with pytest.raises(UserError) as moved:
        check_code(git(repository, "rev-parse", "v1^{commit}"), repository)
    assert f"the units' code is not the commit the evaluation pinned ({git(repository, 'rev-parse', 'v1^{commit}')[:12]}): " \
           f"it is at commit {head[:12]}" in moved.value.render()
    (repository / "a.py").write_text("one\n")
    (repository / "untracked.txt").write_text("not code the units import\n")
    git(repository, "add", "a.py")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "three")
    head = git(repository, "rev-parse", "HEAD")
    check_code(head, repository)  # an untracked file is not a change of the code
    (repository / "a.py").write_text("an edit made after the pin\n")
    with pytest.raises(UserError) as edited:
        check_code(head, repository)
    assert edited.value.render().startswith(f"{repository}: the units' code is not the commit the evaluation pinned "
                                            f"({head[:12]}): 1 file(s) changed and not committed: a.py; commit")


def test_a_prefect_server_not_there_or_failing_is_one_line(closed_port, monkeypatch) -> None:
    """What ``kobbq eval run --deployment`` (and ``kobbq build``) says of a server before its flow run starts, and again
    when Prefect's client fails on the way (the server killed, restarting behind a proxy): one line naming the URL
    and what to do; any other failure is a bug and keeps its traceback."""
    import http.server
    import threading

    import httpx

    from flows.server import lost_api, problem

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the library's name)
            self.send_error(502)

        def log_message(self, *args: object) -> None:
            pass

    monkeypatch.setenv("PREFECT_API_AUTH_STRING", "kobbq:right")  # read from here, not from a Prefect profile
    monkeypatch.setenv("PREFECT_API_KEY", "unused")
    url = f"http://127.0.0.1:{closed_port()}/api"
    assert problem(url, unset="to run without a work pool") == (
        f"no Prefect server answers at {url} (ConnectError: [Errno 111] Connection refused): start it (`prefect "
        "server start`), or unset PREFECT_API_URL to run without a work pool")
    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=failing.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{failing.server_address[1]}/api"
        assert problem(url).startswith(f"the Prefect server at {url} answers HTTP 502 (Bad Gateway): it is starting")
    finally:
        failing.shutdown()
    wrapped = RuntimeError(f"Failed to reach API at {url}/")
    wrapped.__cause__ = httpx.ConnectError("[Errno 111] Connection refused")
    assert lost_api(wrapped) and lost_api(wrapped.__cause__) and not lost_api(KeyError("state"))
