"""Scale path: the build runs unchanged against a real Prefect server on 127.0.0.1, and every stage's
numbers are there as artifacts, read back through Prefect's client."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from prefect_cluster import Cluster, free_port, wait_healthy


@pytest.fixture
def prefect_server(tmp_path):
    with Cluster(tmp_path / "cluster") as cluster:
        cluster.root.mkdir()
        url = cluster.start_server()
        yield url, cluster.client_env("cli")


@pytest.mark.flow
def test_build_runs_through_a_prefect_server(prefect_server, tmp_path):
    url, env = prefect_server
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--out", str(tmp_path / "out"), "--quiet"],
                            cwd=PROJECT_ROOT, env={**env, "PREFECT_API_URL": url}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert "no server configured" not in result.stderr  # the server named by PREFECT_API_URL, no temporary one
    assert (tmp_path / "out" / "KoBBQ-example" / "manifest.json").exists()
    request = urllib.request.Request(f"{url}/flow_runs/filter", data=json.dumps({}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        runs = json.loads(response.read())
    # One flow run for the command, named after it; its stages are its tasks.
    assert [(run["name"], run["state_type"]) for run in runs] == [("kobbq build", "COMPLETED")]
    release = tmp_path / "out" / "KoBBQ-example"
    artifacts = latest_artifacts(url)  # keyed by the release's name: the example's are not the real KoBBQ's
    stages = ["labels", "pretranslate", "postedit", "templates", "survey-export", "survey", "release"]
    assert {f"kobbq-example-{stage}-summary" for stage in stages} <= set(artifacts)
    assert {f"kobbq-example-{key}" for key in ("labels-agreement", "labels-rules", "survey-funnel", "survey-rules",
                                                "release-funnel", "release-table1", "release-validation",
                                                "release-folder", "release-audit")} <= set(artifacts)
    # Prefect 3 stores a link artifact as markdown: [text](link)
    assert artifacts["kobbq-example-release-folder"].data == f"[{release.resolve()}]({release.resolve().as_uri()})"
    assert f"({(release / 'audit.html').resolve().as_uri()})" in artifacts["kobbq-example-release-audit"].data
    with (release / "table1.csv").open(encoding="utf-8", newline="") as handle:
        assert table_rows(artifacts["kobbq-example-release-table1"]) == list(csv.DictReader(handle))
    validation = json.loads((release / "validation.json").read_text(encoding="utf-8"))
    checks = table_rows(artifacts["kobbq-example-release-validation"])
    assert len(checks) == validation["expectations"] and {row["result"] for row in checks} == {"pass"}
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    funnel = table_rows(artifacts["kobbq-example-release-funnel"])
    assert sum(row["samples"] for row in funnel) == manifest["samples"]
    survey = {row["Rule"]: row for row in table_rows(artifacts["kobbq-example-survey-funnel"])}
    assert survey["type2-two-thirds"]["Stereotypes dropped"] == "1 of 2 (50.0%)"  # as funnel.md says
    assert "| type2-two-thirds |" in (release / "funnel.md").read_text(encoding="utf-8")
    kappa = {row["scope"]: row["Fleiss kappa"] for row in table_rows(artifacts["kobbq-example-labels-agreement"])}
    assert kappa["all"] == "0.611"  # the example's three annotators (labels_agreement.txt)
    assert "76,048" not in str(artifacts["kobbq-example-release-summary"].data)  # the summary is this release's
    assert f"{manifest['samples']:,} samples" in str(artifacts["kobbq-example-release-summary"].data)

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
    result = subprocess.run([sys.executable, "-m", "kobbq", "build", "--pipeline", str(tmp_path / "waiting.toml"),
                             "--out", str(tmp_path / "waiting"), "--quiet"], cwd=PROJECT_ROOT,
                            env={**env, "PREFECT_API_URL": url}, capture_output=True, text=True, timeout=600)
    assert "waiting at stage survey" in result.stdout + result.stderr, result.stderr
    summary = str(latest_artifacts(url)["kobbq-example-survey-summary"].data)
    assert "survey: waiting" in summary and "**Waiting for:** survey results:" in summary
    assert "results_not_back_yet.csv does not exist yet" in summary
    assert "**To send out:** Send " in summary and "questionnaire.xlsx" in summary


def latest_artifacts(url: str) -> dict:
    """Every artifact on the server through Prefect's own client, the newest of each key."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        artifacts = client.read_artifacts()
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
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    prefect = [str(Path(sys.executable).with_name("prefect"))]
    started = subprocess.run([*prefect, "server", "start", "--background", "--host", "127.0.0.1", "--port", str(port)],
                             env=env, capture_output=True, text=True, timeout=300)
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
        assert [(run["name"], run["state_type"]) for run in runs] == [("kobbq build", "COMPLETED")]
    finally:
        subprocess.run([*prefect, "server", "stop"], env=env, capture_output=True, timeout=120)


