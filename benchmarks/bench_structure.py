"""The structure, measured: what a newcomer meets following a command, and the import graph; prints its figures.

    .venv/bin/python benchmarks/bench_structure.py [--tests N] [--skip-commands]

1. Per command, run in its own process (``kobbq.cli.main``) with a profile hook on every call into the
   project's code (``core``, ``tasks``, ``flows``, ``kobbq``):
   - how often the profile is loaded (``core.profile.load_profile``), the "is the release current" check
     runs (``release_is_current``), ``manifest.json`` is opened for reading, a run takes over the build
     folder (``interrupt.take_over``) and the survey rules run (``apply_survey_rules``);
   - the walk: the calling-context tree of project functions (a module or class body, run when it is imported,
     is not a call), each call path kept at its first occurrence
     (a loop over 76k rows counts once), walked depth first. *Files* = distinct project files visited;
     *stays* = consecutive steps in one file, collapsed; *climbs back up* = steps from a file of a lower
     layer into one of a higher layer (core < tasks < flows < kobbq), which is what happens each time
     control goes back to a layer above to decide what to do next; *calls up* = distinct call sites where a
     function of a lower layer calls one of a higher layer (a callback).
   Commands: ``kobbq build`` (the embedded example's pipeline, first run and up to date),
   ``kobbq build --templates`` (the example's template file, first run and up to date),
   ``kobbq survey ingest`` and ``kobbq eval prepare`` on the example.
2. The import graph, from the source: rooms (``core``, ``flows``, ``kobbq``, each ``tasks.<package>``
   and each module at the top of ``tasks``), arrows between rooms, arrows back up (to a higher layer, or one side of a
   two-way tie between two tasks packages), and the function-level imports in ``kobbq/commands`` (with
   how many say why on the line above).
3. With ``--tests N``: the fast test run (``pytest -q``), median of N wall times.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("KOBBQ_PREFECT_SERVER", "temporary")  # its builds leave no Prefect server running

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "tasks", "flows", "kobbq")
LAYER = {"core": 0, "tasks": 1, "flows": 2, "kobbq": 3}
COUNTED = {"load_profile": "profile loads", "release_is_current": "current checks",
           "current_manifest": "current checks",  # release_is_current's name since issue 21
           "take_over": "take-overs", "apply_survey_rules": "survey rule runs"}


# --- 1. the walk of one command (run in a child process) ------------------------------------------

class Walk:
    """The calling-context tree of project functions, built from profile events, one per thread."""

    def __init__(self) -> None:
        self.roots: dict[int, dict] = {}
        self.stacks: dict[int, list] = {}
        self.counts: Counter[str] = Counter()
        self.files: dict[str, str | None] = {}
        self.calls_up: set[tuple] = set()  # (caller file, caller, callee): a lower layer calling into a higher one

    def project_file(self, filename: str) -> str | None:
        """The file relative to the project when it is project code, else None (remembered: called per event)."""
        if filename not in self.files:
            try:
                rel = Path(filename).resolve().relative_to(ROOT)
                self.files[filename] = rel.as_posix() if rel.parts and rel.parts[0] in PACKAGES else None
            except ValueError:
                self.files[filename] = None
        return self.files[filename]

    def hook(self, frame, event, arg) -> None:
        if event not in ("call", "return"):
            return
        code = frame.f_code
        file = self.project_file(code.co_filename)
        if file is None:
            return
        thread = threading.get_ident()
        stack = self.stacks.setdefault(thread, [])
        if event == "return":
            if stack and stack[-1][0] is frame:
                stack.pop()
            return
        if code.co_name in COUNTED and file.startswith(("core/", "tasks/")):
            self.counts[COUNTED[code.co_name]] += 1
        if not code.co_flags & inspect.CO_OPTIMIZED:  # a module's or a class's body, run once when imported
            return
        parent = stack[-1][1] if stack else self.roots.setdefault(thread, {"file": None, "children": {}})
        key = (file, code.co_firstlineno, code.co_name)
        if parent["file"] is not None and layer(file) > layer(parent["file"]):
            self.calls_up.add((parent["file"], parent.get("name"), key))
        node = parent["children"].get(key)
        if node is None:
            node = parent["children"][key] = {"file": file, "name": code.co_name, "children": {}}
        stack.append((frame, node))

    def steps(self) -> list[str]:
        """Files in depth-first order of the tree: into each child and back to its caller."""
        files: list[str] = []

        def walk(node: dict) -> None:
            for child in node["children"].values():
                files.append(child["file"])
                walk(child)
                if node["file"] is not None:
                    files.append(node["file"])

        for root in self.roots.values():
            walk(root)
        return files


def layer(file: str) -> int:
    return LAYER[file.split("/")[0]]


def walk_figures(steps: list[str]) -> dict[str, int]:
    stays = [f for i, f in enumerate(steps) if i == 0 or steps[i - 1] != f]
    climbs = sum(1 for a, b in zip(stays, stays[1:]) if layer(b) > layer(a))
    return {"files": len(set(steps)), "stays": len(stays), "climbs back up": climbs}


def measure_one(argv: list[str]) -> dict[str, object]:
    """Run ``kobbq ARGV`` here under the hook; its figures."""
    sys.path.insert(0, str(ROOT))
    walk = Walk()
    manifests = Counter()

    def audit(event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], (str, os.PathLike)) and str(args[0]).endswith("manifest.json"):
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
            if "r" in mode or mode == "":
                manifests["manifest reads"] += 1

    sys.addaudithook(audit)
    from kobbq.cli import main

    start = time.perf_counter()
    threading.setprofile(walk.hook)
    sys.setprofile(walk.hook)
    try:
        code = main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return {"exit": code, "seconds": round(time.perf_counter() - start, 1),
            **{name: walk.counts.get(name, 0) for name in COUNTED.values()},
            "manifest reads": manifests["manifest reads"], **walk_figures(walk.steps()),
            "calls up": len(walk.calls_up)}


def commands(tmp: Path) -> list[tuple[str, list[str]]]:
    example = ROOT / "templates_raw" / "example"
    direct = ["build", "--templates", str(example / "kobbq_example_templates.tsv"), "--test-split", "seeded",
              "--out", str(tmp / "direct")]
    survey = ROOT / "survey" / "ko" / "example"
    return [
        ("build (example pipeline)", ["build", "--quiet", "--out", str(tmp / "pipeline")]),
        ("build (example pipeline, up to date)", ["build", "--quiet", "--out", str(tmp / "pipeline")]),
        ("build --templates", [*direct[:1], "--quiet", *direct[1:]]),
        ("build --templates (up to date)", [*direct[:1], "--quiet", *direct[1:]]),
        ("survey ingest", ["survey", "ingest", "--quiet", "--results", str(survey / "responses.csv"),
                           "--out", str(tmp / "survey")]),
        ("eval prepare", ["eval", "prepare", "--release", str(tmp / "pipeline" / "KoBBQ"),
                          "--out", str(tmp / "prepared")]),
    ]


def run_commands() -> list[tuple[str, dict]]:
    env = {**os.environ, "PREFECT_HOME": os.environ.get("PREFECT_HOME", str(ROOT / ".prefect"))}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-structure-") as folder:
        for label, argv in commands(Path(folder)):
            done = subprocess.run([sys.executable, __file__, "--one", json.dumps(argv)], env=env, cwd=ROOT,
                                  capture_output=True, text=True)
            lines = done.stdout.strip().splitlines()
            if done.returncode != 0 or not lines:
                raise SystemExit(f"{label} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
            rows.append((label, json.loads(lines[-1])))
    return rows


# --- 2. the import graph -------------------------------------------------------------------------

def modules() -> dict[str, ast.Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def imported(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [(node.module, node)] + [(f"{node.module}.{a.name}", node) for a in node.names]
        elif isinstance(node, ast.Import):
            names += [(a.name, node) for a in node.names]
    return names


def room(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "tasks" and len(parts) > 1:  # each tasks package, and each module at its top, is a room
        return f"tasks.{parts[1]}"
    return parts[0]


def graph_figures() -> dict[str, object]:
    trees = modules()
    arrows = {(room(name), room(target)) for name, tree in trees.items()
              for target, _ in imported(tree) if target in trees and room(name) != room(target)}
    up = {(a, b) for a, b in arrows if LAYER[b.split(".")[0]] > LAYER[a.split(".")[0]]}
    ties = sorted({tuple(sorted(pair)) for pair in arrows if pair[::-1] in arrows
                   and pair[0].startswith("tasks") and pair[1].startswith("tasks")})
    function_level, with_reason = 0, 0
    for name, tree in trees.items():
        if not name.startswith("kobbq.commands"):
            continue
        path = ROOT / (name.replace(".", "/") + ".py")
        source = (path if path.exists() else path.with_suffix("") / "__init__.py").read_text().splitlines()
        inner = {id(node): node for function in ast.walk(tree)
                 if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for _, node in imported(function)}
        for node in inner.values():
            function_level += 1
            above = source[node.lineno - 2].strip() if node.lineno >= 2 else ""
            with_reason += above.startswith("#") or "#" in source[node.lineno - 1]
    return {"rooms": len({room(n) for n in trees}), "arrows": len(arrows), "arrows up a layer": sorted(up),
            "two-way ties in tasks": ties, "arrows back up": len(up) + len(ties),
            "function-level imports in kobbq/commands": function_level, "of which say why": with_reason}


# --- 3. the fast tests ---------------------------------------------------------------------------

def fast_tests(runs: int) -> tuple[float, str]:
    times, last = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    return statistics.median(times), last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--skip-commands", action="store_true", help="only the import graph (and --tests)")
    parser.add_argument("--tests", type=int, default=0, metavar="N", help="time the fast tests N times (median)")
    args = parser.parse_args()
    if args.one:
        figures = measure_one(json.loads(args.one))
        print(json.dumps(figures))
        return 0
    if not args.skip_commands:
        rows = run_commands()
        columns = ["profile loads", "current checks", "manifest reads", "take-overs", "survey rule runs",
                   "files", "stays", "climbs back up", "calls up", "seconds"]
        print("| command | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for label, figures in rows:
            print(f"| {label} | " + " | ".join(str(figures[c]) for c in columns) + " |")
    for name, value in graph_figures().items():
        print(f"{name}: {value}")
    if args.tests:
        median, summary = fast_tests(args.tests)
        print(f"fast tests (pytest -q): median {median:.1f} s of {args.tests} ({summary})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
