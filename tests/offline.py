"""What a browser would fetch from the network when it opens a page: a release must open with nothing.

A release is read where it was copied (a laptop on a train, an archive years later), so every HTML
page in it (the audit report, the Data Docs) must load nothing remote: no script, stylesheet, font,
image or icon. Links the reader may follow (``<a href>``, a form's action) are not loads and are fine.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # http://, https://, //cdn...
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""", re.IGNORECASE)
# Attributes whose URL a browser fetches as the page opens, by element ("*": any element).
_LOADED = {"img": ("src", "srcset"), "script": ("src",), "iframe": ("src",), "frame": ("src",), "embed": ("src",),
           "source": ("src", "srcset"), "audio": ("src",), "video": ("src", "poster"), "track": ("src",),
           "input": ("src",), "object": ("data",), "link": ("href",), "image": ("href", "xlink:href"),
           "use": ("href", "xlink:href"), "body": ("background",)}


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if not value:
                continue
            if name in _LOADED.get(tag, ()):
                self.urls += [part.split()[0] for part in value.split(",") if part.strip()] if name.endswith("srcset") \
                    else [value]
            elif name == "style":
                self.urls += css_urls(value)
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += css_urls(data)


def css_urls(css: str) -> list[str]:
    """The URLs a stylesheet loads (``url(...)``, ``@import``)."""
    return [url or imported for url, imported in _CSS_URL.findall(css)]


def remote_loads(html: str) -> list[str]:
    """Every remote URL a browser would fetch while opening this page (empty for an offline page)."""
    parser = _Loads()
    parser.feed(html)
    parser.close()
    return [url for url in parser.urls if REMOTE.match(url)]


def remote_loads_in_folder(folder: Path) -> dict[str, list[str]]:
    """Per HTML page (and stylesheet) of a release folder, relative to it: the remote URLs it would load."""
    found = {}
    for page in sorted(p for p in Path(folder).rglob("*") if p.suffix in (".html", ".htm", ".css")):
        text = page.read_text(encoding="utf-8", errors="replace")
        urls = [u for u in css_urls(text) if REMOTE.match(u)] if page.suffix == ".css" else remote_loads(text)
        if urls:
            found[page.relative_to(folder).as_posix()] = urls
    return found
