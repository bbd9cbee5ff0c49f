"""Every page of a built release in a real headless Chromium, from disk with no network: no console error and no
remote load, and the validation results one link from the dataset card, each of them there."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from core.paths import EXAMPLE_TEMPLATES
from offline import remote_loads_in_folder
from test_release import build_into

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (.ci/run installs it)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]
CONSOLE = re.compile(r":INFO:CONSOLE[^\]]*\] \"(.*)\", source: (\S+)")


@pytest.fixture(scope="module")
def release(tmp_path_factory, ko_profile) -> Path:
    folder = tmp_path_factory.mktemp("pages") / "KoBBQ"
    build_into(folder, EXAMPLE_TEMPLATES, ko_profile, validate=True)
    return folder


def console_messages(tmp_path: Path, page: Path) -> list[str]:
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert "<body" in done.stdout, done.stderr[-2000:]
    return [f"{source}: {message}" for message, source in CONSOLE.findall(done.stderr)]


def test_every_page_of_the_release_opens_without_a_console_error(tmp_path, release):
    pages = sorted(release.rglob("*.html"))
    assert [p.name for p in pages] == ["audit.html"]  # Great Expectations' Data Docs (CDN scripts) are not written
    for page in pages:
        assert console_messages(tmp_path, page) == []
    assert remote_loads_in_folder(release) == {}  # nothing fetched (a blocked image is no console error)


def test_every_validation_result_is_one_link_from_the_card_and_the_audit_page(release):
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "[validation.md](validation.md)" in card
    assert '<a href="validation.md">' in (release / "audit.html").read_text(encoding="utf-8")
    page = (release / "validation.md").read_text(encoding="utf-8")
    results = json.loads((release / "validation.json").read_text(encoding="utf-8"))["results"]
    rows = [line for line in page.splitlines() if line.startswith(("| all |", "| test |"))]
    assert len(rows) == len(results) == 46
    for row, result in zip(rows, results):
        assert row.startswith(f"| {result['sample_set']} | {result['rule']} | `{result['expectation']}`")
        assert row.endswith("| pass |") == result["success"]
