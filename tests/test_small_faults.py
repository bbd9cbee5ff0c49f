"""The smaller faults of the reliability issue, each checked where it lives: a decision restated by a later
stage shows once, a page's remote loads found, a real translation run is not announced as a dry run."""

from __future__ import annotations

from core.decisions import Decision
from tasks.audit.fates import _once
from offline import remote_loads
from tasks.translation.pretranslate import CostEstimate


def test_a_decision_restated_by_a_later_stage_is_shown_once():
    chosen = Decision("survey-export", "stereotype", "stereotype:Age:고집", "survey-type", "type 2", "asked as type 2")
    restated = Decision("survey", "stereotype", "stereotype:Age:고집", "survey-type", "type 2", "asked as type 2",
                        {"survey_type": 2})
    other = Decision("survey", "stereotype", "stereotype:Age:고집", "type2-two-thirds", "keep", "70 of 100")
    assert sorted(_once([chosen, restated, other]), key=lambda d: d.rule) == [restated, other]


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
