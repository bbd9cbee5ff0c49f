"""The documentation site builds with ``mkdocs build --strict`` (mkdocs.yml): no broken link or anchor, no page in
the navigation that does not exist, no page left out of it; it reads from disk (a page per file, nothing loaded
from the network, the search index a script) and links to the repository with the version; and the reference
pages are completed from the code (docs/hooks/reference.py), every command's ``--help`` and every pipeline-file
and profile key on them. tests/test_docs_site_browser.py reads the same site in Chromium.

In-process, into a temporary folder (a few seconds): MkDocs raises ``Abort`` on the first build with a warning.
"""

from __future__ import annotations

import html
import os
import re
import tomllib
from pathlib import Path

import pytest

from core.paths import PROJECT_ROOT
from test_docs_commands import reference_hook


def build_site(config_file: Path, site: Path) -> None:
    # MkDocs is imported when a site is built, not when every pytest worker collects this file (the test extra
    # installs mkdocs and mkdocs-material)
    from mkdocs.commands import build as mkdocs_build
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # Material's banner about MkDocs 2, printed on every build
    config = load_config(str(config_file), strict=True, site_dir=str(site))
    config.plugins.on_startup(command="build", dirty=False)
    try:
        mkdocs_build.build(config)
    finally:
        config.plugins.on_shutdown()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    build_site(PROJECT_ROOT / "mkdocs.yml", folder)
    return folder


def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    pages = {p.relative_to(PROJECT_ROOT / "docs").with_suffix(".html").as_posix()
             for p in (PROJECT_ROOT / "docs").rglob("*.md")}
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert pages <= built  # page.html, not page/index.html: a folder opened from disk is a listing
    assert (site / "search" / "search_index.js").exists()  # the index as a script, which a page on disk can load


def test_every_page_loads_only_its_own_files_and_links_the_repository_with_the_version(site: Path) -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for page in site.rglob("*.html"):
        source = page.read_text(encoding="utf-8")
        loaded = re.findall(r'<script[^>]* src="([^"]+)"|<link[^>]* href="([^"]+)"', source)
        remote = [url for pair in loaded for url in pair if re.match(r"(https?:)?//", url)]
        assert not remote, f"{page.relative_to(site)} loads {remote}"
        assert f'href="{project["urls"]["Repository"]}"' in source, page
        assert f'{project["name"]} {project["version"]}' in source, page


def test_the_command_reference_has_every_commands_help(site: Path) -> None:
    hook = reference_hook()
    from kobbq.cli import build_parser

    page = (site / "reference" / "commands.html").read_text(encoding="utf-8")
    text = "".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())
    commands = list(hook.subcommands(build_parser(), ["kobbq"]))
    assert len(commands) >= 25 and ["kobbq", "eval", "run"] in [names for names, _ in commands]
    for names, parser in commands:
        assert f'id="{hook.anchor(names)}"' in page, " ".join(names)
        # as --help prints it, at any width (whitespace aside: argparse wraps at the terminal's, and after a hyphen)
        assert "".join(parser.format_help().split()) in text, " ".join(names)


def test_the_pipeline_file_and_profile_references_have_every_key(site: Path) -> None:
    from core.pipeline_file import PipelineConfig
    from core.profile import Profile, TemplateFormat

    pipeline_page = (site / "reference" / "pipeline-file.html").read_text(encoding="utf-8")
    profile_page = (site / "reference" / "profile.html").read_text(encoding="utf-8")
    for model, page in ((PipelineConfig, pipeline_page), (Profile, profile_page), (TemplateFormat, profile_page)):
        for name in model.model_fields:
            if name != "path":
                assert f"<td><code>{name}</code></td>" in page, f"{model.__name__}.{name}"
    assert 'id="templates-workbook"' in profile_page and "判断できない" in profile_page  # the ja example, shown


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md#nowhere) and [a page](missing.md).\n",
                                   encoding="utf-8")
    (docs / "guide.md").write_text("# Guide\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\nnav:\n  - index.md\n  - guide.md\n"
                      "validation:\n  links:\n    not_found: warn\n    anchors: warn\n", encoding="utf-8")
    from mkdocs.exceptions import Abort

    with pytest.raises(Abort, match="2 warnings"):
        build_site(config, tmp_path / "site")


def test_a_field_comment_is_its_description_and_an_unknown_marker_is_an_error() -> None:
    hook = reference_hook()
    from core.pipeline_file import LabelsSection

    assert hook.field_notes(LabelsSection)["bbq"] == "folder (or file) of English BBQ templates"
    assert "final label per BBQ template" in hook.pipeline_file_page()
    with pytest.raises(KeyError, match="no-such-page"):
        hook.render("text\n<!-- generated: no-such-page -->\n")
