"""Start once: ``--help`` of every command imports neither Prefect, pandas nor Great Expectations, the commands
that only read start no Prefect, and an up-to-date build imports no stage. Each check runs in a new interpreter (this
one has imported them all)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.paths import EXAMPLE_PIPELINE, EXAMPLE_TEMPLATES, PROJECT_ROOT
from tasks.pipeline.plan import templates_plan
from tasks.pipeline.run import execute
from test_release import built_example

HEAVY = ("prefect", "pandas", "great_expectations")

# Every subcommand's --help in one interpreter (argparse exits after printing: caught), then the heavy modules
# that got imported.
EVERY_HELP = """
import contextlib, io, json, sys
from kobbq.cli import build_parser, command_modules
helps = 0
for name in command_modules():
    parser = build_parser(name)
    actions = [a for a in parser._subparsers._group_actions][0].choices[name]
    subcommands = [c for a in actions._actions if a.__class__.__name__ == "_SubParsersAction" for c in a.choices]
    for argv in [[name, "--help"]] + [[name, sub, "--help"] for sub in subcommands]:
        shown = io.StringIO()
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(shown):
            parser.parse_args(argv)
        helps += shown.getvalue().startswith("usage: kobbq")
print(helps)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)))
"""


def heavy_modules(code: str) -> tuple[list[str], list[str]]:
    """The heavy modules ``code`` imported (its last line of output), and the lines it printed before."""
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}"], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *before, last = done.stdout.strip().splitlines()
    return json.loads(last), before


def test_every_help_imports_neither_prefect_pandas_nor_great_expectations():
    heavy, (helps,) = heavy_modules(EVERY_HELP)
    assert int(helps) >= 25 and heavy == []  # every command and subcommand: 12 commands, 20 subcommands today


@pytest.fixture(scope="module")
def release(tmp_path_factory, ko_profile) -> Path:
    return built_example(tmp_path_factory, ko_profile)


READERS = {
    "status": ["status", "--pipeline", str(EXAMPLE_PIPELINE), "--out", "{tmp}/nothing-built"],
    "diff": ["diff", str(EXAMPLE_TEMPLATES), str(EXAMPLE_TEMPLATES)],
    "validate": ["validate", str(EXAMPLE_TEMPLATES)],
    "why": ["why", "bbq:Age:1", "--release", "{release}"],
    "publish-dry-run": ["publish", "--release", "{release}", "--to-hub", "someone/kobbq", "--dry-run"],
}

# The commands that only read, one after the other in one new interpreter (a new one each costs its start-up and
# the imports they share again): after each, its exit code and every Prefect module loaded so far. Prefect loaded
# by one command stays loaded, so a command that loads it is never hidden by another (only the first can be the
# cause).
EVERY_READER = """
import contextlib, io, json, sys, traceback
from kobbq.cli import main
for name, argv in json.loads(sys.argv[1]).items():
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
    except BaseException:
        code = traceback.format_exc()
    print(json.dumps([name, code, sorted(m for m in sys.modules if m.split('.')[0] == 'prefect')]))
"""


@pytest.fixture(scope="module")
def after_each_reader(tmp_path_factory, release: Path) -> dict[str, tuple[int | str, list[str]]]:
    """Each command of ``READERS``: (its exit code or traceback, the Prefect modules loaded once it ran)."""
    tmp = tmp_path_factory.mktemp("readers")
    argvs = {name: [arg.replace("{tmp}", str(tmp)).replace("{release}", str(release)) for arg in argv]
             for name, argv in READERS.items()}
    done = subprocess.run([sys.executable, "-c", EVERY_READER, json.dumps(argvs)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {name: (code, loaded) for name, code, loaded in map(json.loads, done.stdout.strip().splitlines())}


@pytest.mark.parametrize("name", READERS)
def test_commands_that_only_read_import_no_prefect(name: str, after_each_reader):
    assert after_each_reader[name] == (0, [])


@pytest.mark.subprocess  # the release's checks run in their child process
def test_an_up_to_date_build_imports_no_stage_nor_their_libraries(tmp_path: Path, ko_profile):
    """Planning reads the stages' contracts alone (``tasks.pipeline.stages``): a build with nothing to do imports
    no stage's module, nor what they need to work (pandas, numpy), nor Prefect."""
    plan = templates_plan(EXAMPLE_TEMPLATES, tmp_path, ko_profile, test_split="seeded")  # the example lists no IDs
    assert execute(plan).finished  # built, without Prefect
    argv = ["build", "--templates", str(EXAMPLE_TEMPLATES), "--test-split", "seeded", "--no-corrections", "--out",
            str(tmp_path)]
    code = (f"import contextlib, io, json, sys\nfrom kobbq.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as said:\n    assert main({argv!r}) == 0\n"
            "print(said.getvalue().strip())\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.endswith('_stage') or m.split('.')[0] in "
            "(*HEAVY, 'numpy'))))")
    heavy, said = heavy_modules(code)
    assert "up to date" in said[-1] and heavy == []
