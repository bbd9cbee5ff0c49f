"""The audit report in a real headless Chromium: it renders offline, its charts draw, and its search box filters
templates. The screenshot of the example's report (charts first) is kept as test output:
``build/test-output/audit.png``."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from core.paths import EXAMPLE_TEMPLATES, PROJECT_ROOT
from test_release import build_into

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (.ci/run installs it)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def audit_html(tmp_path_factory, ko_profile) -> Path:
    release = tmp_path_factory.mktemp("audit") / "KoBBQ"
    build_into(release, EXAMPLE_TEMPLATES, ko_profile)
    return release / "audit.html"


def test_report_renders_to_a_full_page_screenshot(tmp_path, audit_html):
    shot = tmp_path / "audit.png"
    chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", audit_html.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 1600)
    assert len(data) > 50_000  # a blank page compresses to a few kilobytes


def test_search_box_filters_templates_in_the_browser(tmp_path, audit_html):
    page = tmp_path / "searched.html"
    typed = ("<script>var box = document.getElementById('search'); box.value = 'religion-001';"
             "box.dispatchEvent(new Event('input'));</script></body>")
    page.write_text(audit_html.read_text(encoding="utf-8").replace("</body>", typed), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    rows = re.findall(r'<tr class="template( hidden)?"', dom)
    assert len(rows) == 6 and rows.count("") == 1  # the example's six templates; one matches
    assert re.search(r'id="search-count"[^>]*>1 of 6 templates<', dom)


CHART_PROBE = """<script>
var found = [];
document.querySelectorAll("figure.chart").forEach(function (figure) {
  var svg = figure.querySelector("svg"), box = svg.getBoundingClientRect();
  var marks = Array.prototype.slice.call(svg.querySelectorAll("g[id*='-rectangle-'] path, g[id*='-pathcollection-'] use"));
  var drawn = marks.filter(function (m) { var b = m.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
  var texts = svg.querySelectorAll("text").length;
  found.push([figure.id, Math.round(box.width), Math.round(box.height), drawn.length, texts].join(","));
});
var probe = document.createElement("pre"); probe.id = "chart-probe"; probe.textContent = found.join(";");
document.body.appendChild(probe);
</script></body>"""


def test_the_charts_render_in_the_browser(tmp_path, example_release):
    """The whole example pipeline's report (with its survey): every chart is laid out with its marks drawn and its
    text as text; the screenshot is kept."""
    report = example_release / "audit.html"
    page = tmp_path / "probed.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", CHART_PROBE), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    probe = re.search(r'<pre id="chart-probe">([^<]*)</pre>', dom)
    assert probe, dom[-2000:]
    charts = {fields[0]: [int(v) for v in fields[1:]] for fields in (c.split(",") for c in probe[1].split(";"))}
    assert list(charts) == ["chart-funnel", "chart-samples", "chart-type1", "chart-type2", "chart-nostereotype"]
    for name, (width, height, drawn, texts) in charts.items():
        assert width >= 900 and height >= 100, name
        assert drawn >= 5, name  # the plot's background, then its bars or dots
        assert texts >= 8, name  # title, axis labels, ticks, row labels
    output = PROJECT_ROOT / "build" / "test-output"
    output.mkdir(parents=True, exist_ok=True)
    shot = output / "audit.png"
    chromium(tmp_path, "--window-size=1280,2600", f"--screenshot={shot}", report.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1280, 2600)
    assert len(data) > 100_000


WIDTH_PROBE = """<script>
var before = document.documentElement.scrollWidth;
document.querySelectorAll("details").forEach(function (d) { d.open = true; });
var probe = document.createElement("pre"); probe.id = "width-probe";
probe.textContent = [before, document.documentElement.scrollWidth, window.innerWidth,
                     document.querySelectorAll("div.funnel table").length].join(",");
document.body.appendChild(probe);
</script></body>"""


def test_open_decisions_keep_the_page_in_the_window_and_the_funnel_is_rendered(tmp_path, example_release):
    """Every decisions table opened, the page is no wider than the window (a long reason or JSON made it wider);
    funnel.md shows as HTML tables, not as Markdown source."""
    page = tmp_path / "opened.html"
    page.write_text((example_release / "audit.html").read_text(encoding="utf-8").replace("</body>", WIDTH_PROBE),
                    encoding="utf-8")
    dom = chromium(tmp_path, "--window-size=1280,800", "--dump-dom", page.as_uri()).stdout
    closed, opened, window, funnel_tables = map(int, re.search(r'id="width-probe">([\d,]+)<', dom)[1].split(","))
    assert closed <= window and opened <= window and funnel_tables >= 4
    assert "| Survey type |" not in dom
