"""The documentation site in a real headless Chromium, opened from disk (``file://``) as a reader who built it
would: every navigation link lands on a page (not a folder listing), search answers "diff-bias" with the page
that defines the metrics first, no request leaves the machine (no remote font, script or API), no page logs an
error, and at 1,280 px no code block hides part of its text (it wraps).

Playwright drives Debian's Chromium (``/usr/bin/chromium``: Playwright downloads no browser here).
"""

from __future__ import annotations

import shutil

from typing import TYPE_CHECKING

import pytest

from core.paths import PROJECT_ROOT
from test_docs_site import build_site

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (.ci/run installs it)")]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
# The first line of every code block whose text is wider than its box (none, when blocks wrap or fit).
CUT_CODE = """() => Array.from(document.querySelectorAll(".md-typeset pre > code"))
    .filter(code => code.scrollWidth > code.clientWidth)
    .map(code => code.textContent.split("\\n")[0])"""


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory: pytest.TempPathFactory):
    """A page of a fresh Chromium (Playwright gives it an empty profile) at 1,280 x 900 on the site just built, and
    what it records: every request that is not for a local file, every console error and every uncaught exception."""
    site = tmp_path_factory.mktemp("site")
    build_site(PROJECT_ROOT / "mkdocs.yml", site)
    from playwright.sync_api import sync_playwright  # imported here: every pytest worker collects this slow file

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        remote: list[str] = []
        errors: list[str] = []
        page.on("request", lambda request: remote.append(request.url)
                if not request.url.startswith(("file:", "data:", "blob:", "about:")) else None)
        page.on("console", lambda message: errors.append(f"{page.url}: {message.text}")
                if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
        yield site, page, remote, errors
        browser.close()


def test_the_site_reads_from_disk_every_page_reached_and_nothing_remote_or_cut(browser_page) -> None:
    site, page, remote, errors = browser_page
    page.goto((site / "index.html").as_uri())
    links = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link[href]", "as => as.map(a => a.href)")
    pages = sorted({link.split("#")[0] for link in links})
    assert len(pages) >= 15, pages
    cut: dict[str, list[str]] = {}
    for url in pages:
        page.goto(url)
        assert page.url.endswith(".html") and page.locator("article.md-content__inner h1").count() == 1, url
        if lines := page.evaluate(CUT_CODE):
            cut[page.url.removeprefix(site.as_uri())] = lines
    assert not cut, cut
    assert not remote, remote
    assert not errors, errors


def test_searching_a_metric_finds_its_definition_first(browser_page) -> None:
    site, page, remote, errors = browser_page
    page.goto((site / "guides" / "score-a-model.html").as_uri())
    assert first_hit(page, "diff-bias").startswith((site / "reference" / "scoring.html").as_uri())
    assert not remote and not errors, (remote, errors)


def first_hit(page: Page, query: str) -> str:
    """The address of the first search result for ``query``, typed into the header's search box once the search
    is ready (its worker has read the index: the box then invites typing)."""
    box = page.locator("input.md-search__input")
    box.click(timeout=10_000)
    page.locator(".md-search-result__meta", has_text="Type to start searching").wait_for(timeout=10_000)
    box.press_sequentially(query)
    first = page.locator("li.md-search-result__item a").first
    first.wait_for(timeout=10_000)
    return first.evaluate("a => a.href")
