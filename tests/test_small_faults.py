"""The smaller faults of the reliability issue, each checked where it lives: a decision restated by a later
stage shows once, Data Docs read offline, a real translation run is not announced as a dry run."""

from __future__ import annotations

from core.decisions import Decision
from tasks.audit.fates import _once
from tasks.release.checks import make_docs_offline
from offline import remote_loads, remote_loads_in_folder
from tasks.translation.cost import CostEstimate


def test_a_decision_restated_by_a_later_stage_is_shown_once():
    chosen = Decision("survey-export", "stereotype", "stereotype:Age:고집", "survey-type", "type 2", "asked as type 2")
    restated = Decision("survey", "stereotype", "stereotype:Age:고집", "survey-type", "type 2", "asked as type 2",
                        {"survey_type": 2})
    other = Decision("survey", "stereotype", "stereotype:Age:고집", "type2-two-thirds", "keep", "70 of 100")
    assert sorted(_once([chosen, restated, other]), key=lambda d: d.rule) == [restated, other]


def test_data_docs_load_nothing_from_the_network(tmp_path):
    (tmp_path / "static" / "images").mkdir(parents=True)
    (tmp_path / "static" / "images" / "logo-long.png").write_bytes(b"png")
    (tmp_path / "static" / "styles").mkdir()
    (tmp_path / "static" / "styles" / "default.css").write_text(
        ".brand{background:url('https://bucket.example/full_logo_dark.png') 0 0 no-repeat}", encoding="utf-8")
    page = tmp_path / "validations" / "run" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<html><head><link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/b.css"/>'
                    '<script src="https://code.jquery.com/jquery.js"></script>'
                    "<style>.navbar-brand a {background: url('https://bucket.example/full_logo_dark.png') 0 0;}</style>"
                    '<link rel="shortcut icon" href="../../static/images/favicon.ico"/></head><body>'
                    '<a href="https://greatexpectations.io">docs</a>'
                    '<img\n class="NO-CACHE"\n src="https://bucket.example/logo-long.png?d=20261124T194845Z" alt="GX"/>'
                    '<img src="https://bucket.example/not-shipped.png"/><table></table></body></html>', encoding="utf-8")
    assert len(remote_loads(page.read_text(encoding="utf-8"))) == 5
    make_docs_offline(tmp_path)
    html = page.read_text(encoding="utf-8")
    assert remote_loads(html) == [] and remote_loads_in_folder(tmp_path) == {}
    assert 'src="../../static/images/logo-long.png"' in html  # the logo the Data Docs ship, found from the page
    assert "../../static/images/favicon.ico" in html and 'href="https://greatexpectations.io"' in html  # a link stays


def test_remote_loads_are_what_a_browser_fetches_not_links():
    page = ('<html><head><link rel="icon" href="//cdn.example/i.ico"><style>@import "https://f.example/a.css";'
            "</style></head><body style=\"background:url('http://x.example/b.png')\">"
            '<img srcset="local.png 1x, https://x.example/2x.png 2x"><svg><image href="https://x.example/s.png"/></svg>'
            '<a href="https://example.org">a link</a><form action="https://example.org/f"></form>'
            '<img src="static/local.png"><script>var u = "https://not-loaded.example";</script></body></html>')
    assert remote_loads(page) == ["//cdn.example/i.ico", "https://f.example/a.css", "http://x.example/b.png",
                                  "https://x.example/2x.png", "https://x.example/s.png"]


def test_a_real_translation_run_is_not_called_a_dry_run():
    estimate = CostEstimate(3, 10, 4, 6, 120, 80, 0.003, "USD")
    assert estimate.render(dry_run=True).startswith("dry run: 3 rows") and "would send 6 segments" in estimate.render()
    real = estimate.render(dry_run=False)
    assert real.startswith("to translate: 3 rows") and "sending 6 segments" in real and "dry run" not in real
