"""One constant per release file name: ``core.release_folder`` spells each name, product code imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import core.release_folder as release_folder
from product_code import parsed, product_modules

NAMES = {value for name, value in vars(release_folder).items()
         if name.isupper() and isinstance(value, str) and "." in value and not value.startswith(".")}


def literal_names(path: Path) -> list[str]:
    """Each string literal of the module that is a release file name, with its line."""
    return [f"{path.name}:{node.lineno}: {node.value}" for node in ast.walk(parsed(path))
            if isinstance(node, ast.Constant) and node.value in NAMES]


def test_release_file_names_are_spelled_only_in_release_folder():
    assert {"manifest.json", "audit.html", "README.md", "decisions.parquet"} <= NAMES
    found = [hit for path in product_modules() if path.name != "release_folder.py" for hit in literal_names(path)]
    assert found == []


def test_a_literal_name_is_found_and_a_message_naming_it_is_not(tmp_path):
    module = tmp_path / "probe.py"
    module.write_text('TARGET = "out" + "/" + "table1.md"\nWHY = "no table1.md here"\n', encoding="utf-8")
    assert literal_names(module) == ["probe.py:1: table1.md"]
