"""The documentation site builds with ``mkdocs build --strict`` (mkdocs.yml): no broken link or anchor, no page in
the navigation that does not exist, no page left out of it; and the reference pages are completed from the code
(docs/hooks/reference.py), every command and every pipeline-file and profile key on them.

In-process, into a temporary folder (a few seconds): MkDocs raises ``Abort`` on the first build with a warning.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mkdocs.commands import build as mkdocs_build  # the test extra installs mkdocs and mkdocs-material
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from core.paths import PROJECT_ROOT
from test_docs_commands import reference_hook


def build_site(config_file: Path, site: Path) -> None:
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
    pages = {p.relative_to(PROJECT_ROOT / "docs").with_suffix("").as_posix()
             for p in (PROJECT_ROOT / "docs").rglob("*.md")}
    built = {p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")}
    assert {"index" if p == "index" else p for p in pages} - {"index"} <= built
    assert (site / "index.html").exists() and (site / "search" / "search_index.json").exists()


def test_the_command_reference_has_every_command_and_option(site: Path) -> None:
    hook = reference_hook()
    from kobbq.cli import build_parser

    page = (site / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    for names, parser in hook.subcommands(build_parser(), ["kobbq"]):
        assert f'id="{hook.anchor(names)}"' in page, " ".join(names)
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and action.help != "==SUPPRESS==":
                    assert f"<code>{option}" in page, f"{' '.join(names)} {option}"


def test_the_pipeline_file_and_profile_references_have_every_key(site: Path) -> None:
    from core.pipeline_file import PipelineConfig
    from core.profile import Profile, TemplateFormat

    pipeline_page = (site / "reference" / "pipeline-file" / "index.html").read_text(encoding="utf-8")
    profile_page = (site / "reference" / "profile" / "index.html").read_text(encoding="utf-8")
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
    with pytest.raises(Abort, match="2 warnings"):
        build_site(config, tmp_path / "site")


def test_a_field_comment_is_its_description_and_an_unknown_marker_is_an_error() -> None:
    hook = reference_hook()
    from core.pipeline_file import LabelsSection

    assert hook.field_notes(LabelsSection)["bbq"] == "folder (or file) of English BBQ templates"
    assert "final label per BBQ template" in hook.pipeline_file_page()
    with pytest.raises(KeyError, match="no-such-page"):
        hook.render("text\n<!-- generated: no-such-page -->\n")
