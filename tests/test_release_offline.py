"""Offline means offline: every page of a built release opens with nothing fetched."""

from __future__ import annotations

from offline import remote_loads_in_folder


def test_every_page_of_the_example_release_loads_nothing_remote(example_release):
    pages = sorted(p.relative_to(example_release).as_posix() for p in example_release.rglob("*.html"))
    assert "audit.html" in pages
    assert remote_loads_in_folder(example_release) == {}
