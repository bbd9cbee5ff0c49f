"""The product's modules (``core``, ``tasks``, ``flows``, ``kobbq``), each parsed once per test process.

Four tests read every product module's syntax tree (the layers, the release file names, the profile keys read, the
commands messages name): one parse of them all is ~0.85 s of CPU, so they share it (at most once per xdist worker).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from core.paths import PROJECT_ROOT

PACKAGES = ("core", "tasks", "flows", "kobbq")


def product_modules() -> list[Path]:
    """Every Python file of the product packages, in order."""
    return sorted(path for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py"))


def parsed(path: Path) -> ast.Module:
    """The syntax tree of a Python file: a product module's parsed on its first use in this process (the trees are
    only read), any other file (one a test writes, perhaps twice) each time."""
    return _product_trees().get(path) or ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def _product_trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in product_modules()}
