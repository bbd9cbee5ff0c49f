"""The fuzzing suite's shared parts: hypothesis profiles, malformed-file strategies, and the four promises a
command keeps on any input (tests/test_fuzz_*.py use them).

Whatever a user hands a command, it exits 0 or 1, prints no traceback, writes nothing outside its output
and leaves the previous release byte-identical (a build that succeeds may replace it, only by a complete
release). ``check_command`` asserts exactly that for one run.

Two hypothesis profiles: ``fast`` (a few examples per target, in the default test run; commands are called
in-process with ``kobbq.cli.main``, and a run that gets past every check made before Prefect starts is
stopped there, as ``ReachedPrefect``) and ``long`` (more examples, in the slow step: tests parametrised with
``FUZZ_PROFILES`` get ``long`` under the slow mark; some also run ``kobbq`` in a child process, Prefect
included, on the session's Prefect API). No example database (``database=None``) and a fixed seed
(``KOBBQ_FUZZ_SEED``, default below), so two runs try the same inputs; a failure prints the seed and hypothesis'
reproduction blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from core.paths import PROJECT_ROOT

SEED = int(os.environ.get("KOBBQ_FUZZ_SEED", "20261126"))
_COMMON = dict(deadline=None, database=None, print_blob=True, derandomize=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])
settings.register_profile("fast", max_examples=10, **_COMMON)
settings.register_profile("long", max_examples=150, **_COMMON)

# A test parametrised with these runs the fast profile by default and the long one in the slow step.
FUZZ_PROFILES = [pytest.param("fast", id="fast"), pytest.param("long", id="long", marks=pytest.mark.slow)]


def fuzz(profile: str, strategy: st.SearchStrategy, check: Callable[[object], None], *,
         fast: int | None = None, long: int | None = None) -> None:
    """Run ``check`` on examples of ``strategy`` under the named profile (``fast``/``long`` examples override
    its count for a costly target); on failure the seed is printed and noted on the error."""
    examples = {"fast": fast, "long": long}[profile]
    chosen = settings(settings.get_profile(profile), **({"max_examples": examples} if examples else {}))

    @chosen
    @seed(SEED)
    @given(strategy)
    def run(value):
        check(value)

    try:
        run()
    except BaseException as exc:
        note = f"fuzz profile {profile!r}, seed {SEED}: re-run with KOBBQ_FUZZ_SEED={SEED}"
        print(note)
        exc.add_note(note)
        raise


# --- malformed files ------------------------------------------------------------------------------------

# Text a user's file may hold: any character (control characters, surrogate-free unicode), tabs, quotes,
# brackets and the separators the template syntax gives meaning to.
SYNTAX = st.sampled_from(["\t", "\n", "\r", "\r\n", '"', "'", ",", "[", "]", ":", "{", "}", "=", "\\", "\x00",
                          "\ufeff", "NaN", "-1", "1e309", "", " ", "[N1: ", "{{NAME1}}", "없음"])
CELL = st.one_of(st.text(max_size=40), SYNTAX, st.integers(-10**12, 10**12).map(str),
                 st.lists(SYNTAX, max_size=5).map("".join))
BAD_BYTES = st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\r", b"\x1a",
                             b"\xe2\x82"])


@dataclass(frozen=True)
class ByteDamage:
    """One damage to a file as bytes, drawn without looking at the file (a workbook's bytes differ from one
    write to the next, so what is drawn must not depend on them): truncated, cut in the middle of a
    character, invalid or NUL bytes inserted, a block dropped, replaced by noise, repeated, or emptied."""
    kind: str
    where: float  # position as a fraction of the file's length
    payload: bytes

    def __call__(self, data: bytes) -> bytes:
        at = int(self.where * len(data))
        if self.kind == "truncate":
            return data[:at]
        if self.kind == "insert":
            return data[:at] + self.payload + data[at:]
        if self.kind == "drop":
            return data[:at] + data[at + 1 + len(self.payload) * 8:]
        if self.kind == "noise":
            return self.payload
        if self.kind == "repeat":
            return data + data[at:]
        return b""


BYTE_DAMAGE = st.builds(ByteDamage, st.sampled_from(["truncate", "insert", "drop", "noise", "empty", "repeat"]),
                        st.floats(0, 1), st.one_of(BAD_BYTES, st.binary(min_size=1, max_size=16)))


def byte_damage(data: bytes) -> st.SearchStrategy[bytes]:
    return BYTE_DAMAGE.map(lambda damage: damage(data))


@st.composite
def line_damage(draw, text: str) -> str:
    """One damage to the lines of a text file: a line deleted, duplicated, moved, or replaced by noise."""
    lines = text.split("\n")
    kind = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(j, lines[i])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "replace":
        lines[i] = draw(CELL)
    else:
        lines.insert(i, draw(CELL))
    return "\n".join(lines)


@st.composite
def cell_damage(draw, text: str, delimiter: str) -> str:
    """One damage to a delimited table: a cell (header included) replaced, a cell dropped or added."""
    rows = [line.split(delimiter) for line in text.split("\n")]
    row = draw(st.integers(0, len(rows) - 1))
    cells = rows[row]
    column = draw(st.integers(0, len(cells) - 1))
    kind = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
    if kind == "replace":
        cells[column] = draw(CELL)
    elif kind == "drop":
        del cells[column]
    else:
        cells.insert(column, draw(CELL))
    return "\n".join(delimiter.join(cells) for cells in rows)


def text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def bytes_of(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def malformed_table(data: bytes, delimiter: str, max_damages: int = 3) -> st.SearchStrategy[bytes]:
    """A delimited file (TSV/CSV) with one to ``max_damages`` damages of any kind."""
    @st.composite
    def damaged(draw) -> bytes:
        current = data
        for _ in range(draw(st.integers(1, max_damages))):
            kind = draw(st.sampled_from(["cell", "cell", "line", "bytes"]))
            if kind == "bytes":
                current = draw(byte_damage(current))
            elif kind == "line":
                current = bytes_of(draw(line_damage(text_of(current))))
            else:
                current = bytes_of(draw(cell_damage(text_of(current), delimiter)))
        return current
    return damaged()


# JSON values a damaged field may take: every JSON type, nested a little.
JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**20) | st.floats(allow_nan=True)
                          | CELL, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(CELL, inner, max_size=3), max_leaves=6)


def _json_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_paths(item, (*path, index))


@st.composite
def json_damage(draw, value):
    """One damage to a JSON document: a value anywhere replaced by another of any type, or a key or
    item removed."""
    paths = list(_json_paths(value))
    path = draw(st.sampled_from(paths))
    if not path:
        return draw(JSON_VALUE)
    document = json.loads(json.dumps(value))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    if draw(st.booleans()):
        parent[path[-1]] = draw(JSON_VALUE)
    else:
        del parent[path[-1]]
    return document


def malformed_json(data: bytes, max_damages: int = 2) -> st.SearchStrategy[bytes]:
    """A JSON file with damaged values (its structure kept readable) or damaged bytes."""
    @st.composite
    def damaged(draw) -> bytes:
        if draw(st.integers(0, 3)) == 0:
            return draw(byte_damage(data))
        value = json.loads(data)
        for _ in range(draw(st.integers(1, max_damages))):
            value = draw(json_damage(value))
        return json.dumps(value, ensure_ascii=draw(st.booleans()), allow_nan=True).encode("utf-8")
    return damaged()


# Values a user may mistype, '"/dev/zero"' (a file that never ends) among them. Not "/": a folder input is hashed
# file by file (core/fingerprint.py), so "/" makes `kobbq status` read the whole machine.
TOML_VALUE = st.one_of(CELL.map(lambda s: json.dumps(s)), st.integers(-10**20, 10**20).map(str),
                       st.sampled_from(["true", "false", "[]", "{}", "1.5", "nan", "inf", '""', '"."', '"/dev"',
                                        '"../"', '"*"', '["*"]', '"~"', '"/dev/zero"', '"nope/*.csv"', "[1, 2]",
                                        '{ a = 1 }', '"""x"""']),
                       CELL)


@st.composite
def toml_damage(draw, text: str) -> str:
    """One damage to a TOML file, line by line (there is no TOML writer to round-trip through): a value
    replaced (by any type, or by something that is not TOML), a line deleted, duplicated or invented, a
    table renamed."""
    lines = text.split("\n")
    assignments = [i for i, line in enumerate(lines) if "=" in line and not line.lstrip().startswith("#")]
    kind = draw(st.sampled_from(["value", "value", "value", "line", "key", "table"]))
    if kind == "value" and assignments:
        i = draw(st.sampled_from(assignments))
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {draw(TOML_VALUE)}"
    elif kind == "key":
        name = draw(st.sampled_from(["profile", "name", "test_split", "extra", "results", "bbq", "reference",
                                     "release", draw(st.text("abcdefghij_", min_size=1, max_size=8))]))
        lines.insert(draw(st.integers(0, len(lines))), f"{name} = {draw(TOML_VALUE)}")
    elif kind == "table":
        lines.insert(draw(st.integers(0, len(lines))),
                     f"[{draw(st.sampled_from(['labels', 'survey', 'templates', 'translation', 'nope', 'release']))}]")
    else:
        return draw(line_damage(text))
    return "\n".join(lines)


def malformed_toml(data: bytes, max_damages: int = 2) -> st.SearchStrategy[bytes]:
    @st.composite
    def damaged(draw) -> bytes:
        current = data
        for _ in range(draw(st.integers(1, max_damages))):
            if draw(st.integers(0, 4)) == 0:
                current = draw(byte_damage(current))
            else:
                current = bytes_of(draw(toml_damage(text_of(current))))
        return current
    return damaged()


# --- running a command and checking its promises --------------------------------------------------------

class ReachedPrefect(Exception):
    """An in-process run got past every check made before Prefect starts (the fast profile stops there)."""


def _reached(*_args, **_kwargs):
    raise ReachedPrefect


def _nothing(*_args, **_kwargs) -> None:
    """No child started."""


# What an in-process run replaces: the one place a command hands its plan to Prefect (reached once the runner has
# found work and checked every input), by ReachedPrefect; and the release checks' child the runner starts ahead of
# that flow run (its Great Expectations import, ~4 s of CPU, serves only the flow run), by nothing.
REPLACED = {"kobbq.in_prefect.in_prefect": _reached, "tasks.pipeline.run.warm_up": _nothing}


@dataclass
class Outcome:
    code: int | None  # None: stopped where Prefect would start (in-process only)
    out: str
    err: str

    @property
    def reached_prefect(self) -> bool:
        return self.code is None


def run_in_process(argv: list[str], cwd: Path) -> Outcome:
    """``kobbq.cli.main(argv)`` with its output captured; an exception escaping it is reported the way the
    interpreter would print it (a traceback), so the check sees what a user would."""
    from kobbq.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None
    for target in REPLACED:  # imported before it is replaced, so the replacement is what the command finds
        importlib.import_module(target.rsplit(".", 1)[0])
    with contextlib.ExitStack() as stack:
        for target, replacement in REPLACED.items():
            stack.enter_context(mock.patch(target, replacement))
        stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(argv)
        except ReachedPrefect:
            code = None
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 - what escapes main is what the user would see as a traceback
            err.write(traceback.format_exc())
            code = 2
    return Outcome(code, out.getvalue(), err.getvalue())


def in_child(api_url: str) -> Callable[[list[str], Path], Outcome]:
    """A runner of ``python -m kobbq ARGV`` in ``cwd``, Prefect and all, its flow runs on the Prefect API at
    ``api_url`` (the session's, ``prefect_api_url``): what is fuzzed is the command's input, not Prefect's start-up,
    which a temporary server per command would pay again for every example (5-20 s each)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "PREFECT_API_URL": api_url}

    def run(argv: list[str], cwd: Path, timeout: float = 600) -> Outcome:
        done = subprocess.run([sys.executable, "-m", "kobbq", *argv], cwd=cwd, capture_output=True, text=True,
                              errors="replace", timeout=timeout, env=env)
        return Outcome(done.returncode, done.stdout, done.stderr)
    return run


def snapshot(root: Path) -> dict[str, str]:
    """Every file (sha256) and folder under ``root``, by relative path: what the promises compare."""
    found = {}
    if not root.exists():
        return found
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file():
            found[relative] = "folder" if path.is_dir() else "other"
        else:
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def release_intact(release: Path) -> bool:
    """A complete release: its manifest reads, and every output it lists is there with the recorded hash."""
    try:
        outputs = json.loads((release / "manifest.json").read_text(encoding="utf-8"))["outputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all((release / name).is_file() and hashlib.sha256((release / name).read_bytes()).hexdigest() == digest
               for name, digest in outputs.items())


def check_command(argv: list[str], workspace: Path, outputs: list[str], release: str | None = None,
                  runner: Callable[[list[str], Path], Outcome] = run_in_process, what: str = "") -> Outcome:
    """Run one command in ``workspace`` and assert its promises. ``outputs``: paths (relative to the
    workspace) it may write under; ``release``: the previous release (relative), which must stay
    byte-identical unless the command succeeded and replaced it by a complete release."""
    before = snapshot(workspace)
    kept = snapshot(workspace / release) if release else {}
    outcome = runner(argv, workspace)
    shown = f"{what}\nkobbq {' '.join(argv)}\n--- exit {outcome.code}\n--- stdout\n{outcome.out[-3000:]}\n" \
            f"--- stderr\n{outcome.err[-6000:]}"
    assert outcome.code in (0, 1, None), shown
    assert "Traceback" not in outcome.out and "Traceback" not in outcome.err, shown
    if outcome.code == 1:
        assert (outcome.err + outcome.out).strip(), shown  # a failure says why
    after = snapshot(workspace)
    stray = [p for p in changed(before, after) if not any(p == o or p.startswith(f"{o}/") for o in outputs)]
    assert not stray, f"written outside the output: {stray}\n{shown}"
    if release:
        now = snapshot(workspace / release)
        if outcome.code == 0 and now != kept:
            assert release_intact(workspace / release), f"release replaced by an incomplete one\n{shown}"
        else:
            assert now == kept, f"previous release changed: {changed(kept, now)[:10]}\n{shown}"
    return outcome


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --- the previous release ------------------------------------------------------------------------------

# `kobbq build` of the example with this command line finds the release below up to date.
EXAMPLE_BUILD = ["--test-split", "seeded"]
# What `kobbq status` may write: its record of the release's files as it verified them, beside the release.
STATUS_RECORD = "build/.KoBBQ.verified.json"


@contextlib.contextmanager
def workspace(release: Path | None = None) -> Iterator[Path]:
    """A fresh folder for one example (hypothesis runs many per test, so no function-scoped tmp_path), with
    the previous release copied to build/<name> when given."""
    with tempfile.TemporaryDirectory(prefix="kobbq-fuzz-") as folder:
        root = Path(folder)
        if release is not None:
            shutil.copytree(release, root / "build" / release.name)
        yield root
