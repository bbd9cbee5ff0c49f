"""The site's link to the repository, named with the version it documents: both read from ``pyproject.toml``
(``[project] version`` and ``[project.urls] Repository``), the one place they are written.

An MkDocs hook (``hooks:`` in ``mkdocs.yml``); Material shows the link at the right of every page's header.
"""

from __future__ import annotations

import tomllib

from core.paths import PROJECT_ROOT


def on_config(config):  # MkDocs' hook (mkdocs.plugins.BasePlugin)
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    config.repo_url = project["urls"]["Repository"]
    config.repo_name = f"{project['name']} {project['version']}"
    return config
