"""Scale path: the build runs unchanged against a real Prefect server on 127.0.0.1, and every stage's
numbers are there as artifacts, read back through Prefect's client.

The builds report to the session's Prefect API (``prefect_api_url``, a real server its worker started for the
flow tests; a server of this test's own cost a start-up of 15-30 s): what a build made is read back by the flow
runs started after it began (a worker runs one test at a time) and by the artifact keys of its output folder."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from prefect_cluster import PORT_ATTEMPTS, QUIET, free_port, wait_healthy


@pytest.mark.flow
def test_build_runs_through_a_prefect_server(prefect_api_url, tmp_path):
    url, env = prefect_api_url, {**os.environ, **QUIET, "PREFECT_HOME": str(tmp_path / "home")}
    began = now()
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--out", str(tmp_path / "out"), "--quiet"],
                            cwd=PROJECT_ROOT, env={**env, "PREFECT_API_URL": url}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert "no server configured" not in result.stderr  # the server named by PREFECT_API_URL, no temporary one
    assert (tmp_path / "out" / "KoBBQ-example" / "manifest.json").exists()
    # One flow run for the command, named after the release and the command, its parameters the command's
    # arguments, its log the progress lines; its stages are its task runs.
    (run,) = runs_since(url, began)
    assert (run.name, run.state.type.value, run.state.name) == (
        f"KoBBQ-example build --out {tmp_path / 'out'} --quiet", "COMPLETED", "Completed")
    assert run.parameters["command"] == f"build --out {tmp_path / 'out'} --quiet"
    assert run.parameters["arguments"]["out"] == str(tmp_path / "out") and run.parameters["arguments"]["quiet"]
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    logs = [log.message for log in read(url, lambda client: client.read_logs(log_filter=LogFilter(
        flow_run_id=LogFilterFlowRunId(any_=[run.id]))))]
    assert "flow started (Prefect API ready)" in logs and any(m.startswith("release: done: 112 samples") for m in logs)
    stages = ["labels", "pretranslate", "postedit", "templates", "survey-export", "survey", "release"]
    assert sorted((task.name, task.state.name) for task in task_runs(url, run)) == \
        sorted((stage, "Completed") for stage in stages)
    release = tmp_path / "out" / "KoBBQ-example"
    # Keyed by the release and its folder: another build of a release named KoBBQ elsewhere keeps its own.
    key = f"kobbq-example-{hashlib.sha256(str(release.resolve()).encode()).hexdigest()[:8]}-"
    artifacts = {name.removeprefix(key): artifact for name, artifact in latest_artifacts(url, key).items()
                 if name.startswith(key)}
    assert {f"{stage}-summary" for stage in stages} <= set(artifacts)
    assert {"labels-agreement", "labels-rules", "survey-funnel", "survey-rules", "release-funnel", "release-table1",
            "release-validation", "release-folder", "release-audit"} <= set(artifacts)
    # Prefect 3 stores a link artifact as markdown: [text](link)
    assert artifacts["release-folder"].data == f"[{release.resolve()}]({release.resolve().as_uri()})"
    assert f"({(release / 'audit.html').resolve().as_uri()})" in artifacts["release-audit"].data
    with (release / "table1.csv").open(encoding="utf-8", newline="") as handle:
        assert table_rows(artifacts["release-table1"]) == list(csv.DictReader(handle))
    validation = json.loads((release / "validation.json").read_text(encoding="utf-8"))
    checks = table_rows(artifacts["release-validation"])
    assert len(checks) == validation["expectations"] and {row["result"] for row in checks} == {"pass"}
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    funnel = table_rows(artifacts["release-funnel"])
    assert sum(row["samples"] for row in funnel) == manifest["samples"]
    survey = {row["Rule"]: row for row in table_rows(artifacts["survey-funnel"])}
    assert survey["type2-two-thirds"]["Stereotypes dropped"] == "1 of 2 (50.0%)"  # as funnel.md says
    assert "| type2-two-thirds |" in (release / "funnel.md").read_text(encoding="utf-8")
    kappa = {row["scope"]: row["Fleiss kappa"] for row in table_rows(artifacts["labels-agreement"])}
    assert kappa["all"] == "0.611"  # the example's three annotators (labels_agreement.txt)
    assert "76,048" not in str(artifacts["release-summary"].data)  # the summary is this release's
    assert f"{manifest['samples']:,} samples" in str(artifacts["release-summary"].data)

    # A stage that waits for people says, on its run, what it waits for and what to send out.
    example = PROJECT_ROOT / "templates_raw" / "example"
    waiting = (example / "pipeline.toml").read_text(encoding="utf-8")
    waiting = re.sub(r'^(bbq|consensus|cache|returned|groups|newly_created|corrections|reading|questions|overrides)'
                     r' = "([^"]+)"', lambda m: f'{m[1]} = "{(example / m[2]).resolve().as_posix()}"', waiting,
                     flags=re.MULTILINE)
    waiting = waiting.replace('annotations = ["labels/', f'annotations = ["{example.as_posix()}/labels/')
    waiting = re.sub(r'^results = "[^"]+"', f'results = "{(tmp_path / "results_not_back_yet.csv").as_posix()}"',
                     waiting, flags=re.MULTILINE)
    (tmp_path / "waiting.toml").write_text(waiting, encoding="utf-8")
    began = now()
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--pipeline", str(tmp_path / "waiting.toml"),
                             "--out", str(tmp_path / "waiting"), "--quiet"], cwd=PROJECT_ROOT,
                            env={**env, "PREFECT_API_URL": url}, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "waiting at stage survey" in result.stdout, result.stderr
    (waited,) = runs_since(url, began)
    assert (waited.state.type.value, waited.state.name) == ("COMPLETED", "Waiting for survey results")
    assert "results_not_back_yet.csv does not exist yet" in waited.state.message
    key = f"kobbq-example-{hashlib.sha256(str((tmp_path / 'waiting' / 'KoBBQ-example').resolve()).encode()).hexdigest()[:8]}-"
    summary = str(latest_artifacts(url, key)[f"{key}survey-summary"].data)
    assert "survey: waiting" in summary and "**Waiting for:** survey results:" in summary
    assert "results_not_back_yet.csv does not exist yet" in summary
    assert "**To send out:** Send " in summary and "questionnaire.xlsx" in summary

    # A stage that fails: its task run and the flow run are Failed, with the error's line as the message; the
    # command says it in one paragraph and exits 1, as without Prefect.
    consensus = tmp_path / "consensus.csv"
    consensus.write_text((example / "labels" / "consensus.csv").read_text(encoding="utf-8").replace(",ST", ",XX", 1),
                         encoding="utf-8")
    bad = re.sub(r'^consensus = "[^"]+"', f'consensus = "{consensus.as_posix()}"', waiting, flags=re.MULTILINE)
    (tmp_path / "bad.toml").write_text(bad, encoding="utf-8")
    began = now()
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--pipeline", str(tmp_path / "bad.toml"),
                             "--out", str(tmp_path / "failed")], cwd=PROJECT_ROOT,
                            env={**env, "PREFECT_API_URL": url}, capture_output=True, text=True, timeout=600)
    assert result.returncode == 1 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr
    (failed,) = runs_since(url, began)
    assert (failed.state.type.value, failed.state.name) == ("FAILED", "Failed")
    assert failed.state.message.startswith("labels: ") and "XX" in failed.state.message
    assert "\n" not in failed.state.message
    assert [(t.name, t.state.type.value) for t in task_runs(url, failed)] == [("labels", "FAILED")]


def read(url: str, what):  # noqa: ANN001, ANN201
    """What ``what(client)`` reads from the server at ``url``, through Prefect's own client."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        return what(client)


def now() -> datetime:
    return datetime.now(timezone.utc)


def runs_since(url: str, began: datetime) -> list:
    """The flow runs that started after ``began``: those of the command run since (the server's other runs are the
    earlier tests' of this worker)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterStartTime

    started = FlowRunFilter(start_time=FlowRunFilterStartTime(after_=began))
    return read(url, lambda client: client.read_flow_runs(flow_run_filter=started))


def task_runs(url: str, run) -> list:  # noqa: ANN001
    """The task runs of the flow run ``run``."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    of_run = FlowRunFilter(id=FlowRunFilterId(any_=[run.id]))
    return read(url, lambda client: client.read_task_runs(flow_run_filter=of_run))


def latest_artifacts(url: str, key: str) -> dict:
    """The artifacts whose key holds ``key`` (a release folder's) through Prefect's own client, the newest of each
    key."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    artifacts = read(url, lambda client: client.read_artifacts(artifact_filter=ArtifactFilter(
        key=ArtifactFilterKey(like_=key))))
    latest = {}
    for artifact in sorted(artifacts, key=lambda a: a.created):
        latest[artifact.key] = artifact
    return latest


def table_rows(artifact) -> list[dict]:
    data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
    return data


@pytest.mark.flow
def test_the_quick_start_server_runs_the_example_pipeline(tmp_path):
    """As the README starts it: `prefect server start --background`, then PREFECT_API_URL for the commands. Every
    command that builds uses that server (no temporary one: nothing said of one); a second command that finds
    everything current starts no flow run at all."""
    home = tmp_path / "home"
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    prefect = [str(Path(sys.executable).with_name("prefect"))]
    for _ in range(PORT_ATTEMPTS):  # a port found free may be taken before the server checks it: another is tried
        port = free_port()
        started = subprocess.run([*prefect, "server", "start", "--background", "--host", "127.0.0.1", "--port",
                                  str(port)], env=env, capture_output=True, text=True, timeout=300)
        if started.returncode == 0 or f"Port {port} is already in use" not in started.stdout + started.stderr:
            break
    assert started.returncode == 0, started.stdout + started.stderr
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_healthy(url)
        client = {**env, "PREFECT_API_URL": url}
        build = [sys.executable, "-m", "kobbq", "build", "--out", str(tmp_path / "out")]
        first = subprocess.run(build, cwd=PROJECT_ROOT, env=client, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr
        assert "no server configured" not in first.stderr and "112 samples" in first.stdout
        again = subprocess.run(build, cwd=PROJECT_ROOT, env=client, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0 and "up to date" in again.stdout, again.stderr
        request = urllib.request.Request(f"{url}/flow_runs/filter", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            runs = json.loads(response.read())
        assert [(run["name"], run["state_type"]) for run in runs] == [(f"KoBBQ-example build --out {tmp_path / 'out'}",
                                                                       "COMPLETED")]
    finally:
        subprocess.run([*prefect, "server", "stop"], env=env, capture_output=True, timeout=120)


