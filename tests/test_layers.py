"""The structure, checked: core imports nothing above it, tasks never import flows or the CLI, the ``tasks``
sub-packages import only those below them (``TASK_LAYERS``), Prefect only in flows/ (and the CLI), no import
cycles, and project modules imported at module level except in the CLI (which delays Prefect's start-up until the
inputs are checked)."""

from __future__ import annotations

import ast
import functools

from core.paths import PROJECT_ROOT
from product_code import PACKAGES, parsed, product_modules

# The ``tasks`` sub-packages, lowest first, in the pipeline's order: each may import those before it, never one after
# it. Template formats (read, check, expand into samples) serve every stage; labels, translation and the survey
# decide which templates survive; the release assembles them; the audit reads a release folder back; the evaluation
# scores models on a release; the runner (``pipeline``) runs the stages of every package. A new sub-package takes
# its place here; every module of ``tasks`` is in one of them (the stage contract is ``core``'s).
TASK_LAYERS = ("templates", "labels", "translation", "survey", "release", "audit", "evaluation", "pipeline")


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Each product module's tree by its dotted name, made when a test first asks (not when the file is collected,
    which every xdist worker does)."""
    return {".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts).removesuffix(".__init__"): parsed(path)
            for path in product_modules()}


@functools.cache
def _imports(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """The names ``tree`` imports, each with its import statement; a module's walked once for the four tests that
    read them (a tree is only read, and is its own cache key)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, node)] + [(f"{node.module}.{a.name}", node) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node) for a in node.names]
    return found


@functools.cache
def _project_edges() -> dict[str, set[str]]:
    """Each product module's imports of other product modules, made once for the three tests that read them."""
    return {name: {target for target, _ in _imports(tree) if target in modules()} for name, tree in modules().items()}


def test_layers_import_only_downwards():
    allowed = {"core": ("core",), "tasks": ("core", "tasks"), "flows": ("core", "tasks", "flows")}
    wrong = [(name, target) for name, targets in _project_edges().items() for target in targets
             if name.split(".")[0] in allowed and target.split(".")[0] not in allowed[name.split(".")[0]]]
    assert wrong == []


def task_layer(module: str) -> int | None:
    """The position of a ``tasks`` module's sub-package in ``TASK_LAYERS`` (None: not in a sub-package)."""
    parts = module.split(".")
    return TASK_LAYERS.index(parts[1]) if parts[0] == "tasks" and len(parts) > 2 and parts[1] in TASK_LAYERS else None


def arrows_up() -> list[tuple[str, str]]:
    """Imports (module -> module) from a ``tasks`` sub-package into one declared above it."""
    return sorted((name, target) for name, targets in _project_edges().items() for target in targets
                  if None not in (task_layer(name), task_layer(target)) and task_layer(target) > task_layer(name))


def test_task_packages_import_only_downwards():
    assert arrows_up() == []


def test_every_task_package_has_its_place_in_the_order():
    packages = {path.parent.name for path in (PROJECT_ROOT / "tasks").glob("*/__init__.py")}
    assert packages == set(TASK_LAYERS)
    assert [name for name in modules() if name.startswith("tasks.") and name.split(".")[1] not in TASK_LAYERS] == []


def test_every_product_module_is_checked():
    """Every Python file of the product packages is in the graph the tests above read (none skipped as output),
    and no product folder is named like the build output (``build/``), which tools skip."""
    files = {path for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py")}
    assert len(files) == len(modules())
    assert [path for path in files if "build" in path.relative_to(PROJECT_ROOT).parts[:-1]] == []


def test_prefect_only_in_flows_and_the_cli():
    wrong = [name for name, tree in modules().items() if name.split(".")[0] in ("core", "tasks")
             and any(target.split(".")[0] == "prefect" for target, _ in _imports(tree))]
    assert wrong == []


def test_no_import_cycles():
    edges, state, cycles = _project_edges(), {}, []

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert [c for c in cycles if not _package_reexport(c)] == []


def _package_reexport(cycle: list[str]) -> bool:
    """``pkg/__init__`` re-exporting ``pkg.module``, which imports ``pkg.other``: not a cycle of modules."""
    return any(a != b and b.startswith(a + ".") for a, b in zip(cycle, cycle[1:]))


def test_project_imports_at_module_level_outside_the_cli():
    wrong = []
    for name, tree in modules().items():
        if name.startswith("kobbq"):
            continue
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            wrong += [f"{name}:{node.lineno} {target}" for target, node in _imports(function)
                      if target.split(".")[0] in PACKAGES]
    assert sorted(set(wrong)) == []


def test_every_command_has_a_description():
    import argparse

    from kobbq.cli import build_parser

    def without(parser: argparse.ArgumentParser, path: list[str]) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += ([" ".join([*path, name])] if not sub.description else []) + without(sub, [*path, name])
        return found

    assert without(build_parser(), ["kobbq"]) == []
