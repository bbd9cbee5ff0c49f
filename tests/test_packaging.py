"""An installed wheel carries every data file the code reads: each profile's files (prompt tables, instructions,
test-split lists, survey wording) and the report templates. Checked against pyproject.toml's package data, file
by file, as setuptools globs it (``pip wheel --no-deps .`` and listing the wheel shows the same)."""

from __future__ import annotations

import tomllib

from core.paths import PROJECT_ROOT

DATA_FOLDERS = {"core": ["profiles"], "tasks": ["audit/templates", "release/templates"]}


def test_package_data_covers_every_data_file():
    patterns = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]
    for package, folders in DATA_FOLDERS.items():
        root = PROJECT_ROOT / package
        shipped = {path for pattern in patterns[package] for path in root.glob(pattern) if path.is_file()}
        data = {path for folder in folders for path in (root / folder).rglob("*")
                if path.is_file() and path.suffix not in (".py", ".pyc")}
        assert sorted(str(p.relative_to(root)) for p in data - shipped) == []
