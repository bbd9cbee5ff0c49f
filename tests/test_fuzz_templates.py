"""Fuzzing: malformed template files (the KoBBQ TSV, the EsBBQ-style workbooks) given to `kobbq validate` and
`kobbq build --templates`. The promises are tests/fuzzing.py's: exit 0 or 1, no traceback, nothing written
outside the output, the previous release byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import strategies as st
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from core.paths import EXAMPLE_TEMPLATES
from fuzzing import (BYTE_DAMAGE, CELL, EXAMPLE_BUILD, FUZZ_PROFILES, check_command, fuzz, malformed_table, in_child,
                     workspace, write)
from test_generate import AGE_HEADER, AGE_ROW, _sheet

TEMPLATES = EXAMPLE_TEMPLATES.read_bytes()


def check_template_file(data: bytes, release: Path) -> None:
    with workspace(release) as root:
        write(root / "in" / "templates.tsv", data)
        check_command(["validate", "in/templates.tsv"], root, outputs=[], release="build/KoBBQ")
        check_command(["build", "--templates", "in/templates.tsv", *EXAMPLE_BUILD, "--quiet"], root,
                      outputs=["build"], release="build/KoBBQ")


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_template_tsv(profile, previous_release):
    fuzz(profile, malformed_table(TEMPLATES, "\t"), lambda data: check_template_file(data, previous_release),
         fast=8, long=200)


@pytest.mark.slow
@pytest.mark.subprocess
def test_malformed_template_tsv_built_to_the_end(previous_release, prefect_api_url):
    """Child processes, Prefect included: a damaged file that still validates is built and published whole."""
    child = in_child(prefect_api_url)

    def check(data: bytes) -> None:
        with workspace(previous_release) as root:
            write(root / "in" / "templates.tsv", data)
            check_command(["build", "--templates", "in/templates.tsv", *EXAMPLE_BUILD, "--quiet"], root,
                          outputs=["build"], release="build/KoBBQ", runner=child)

    fuzz("long", malformed_table(TEMPLATES, "\t", max_damages=1), check, long=4)


# --- workbook templates (the es profile): a small folder as tests/test_generate.py writes it -------------

WORKBOOK_CELL = st.one_of(CELL.map(lambda text: ILLEGAL_CHARACTERS_RE.sub("", text)), st.none(),
                          st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True), st.booleans())


@st.composite
def workbook_rows(draw) -> list[list[object]]:
    """The Age sheet (header, a row, an empty row) with cells replaced, a column dropped or a row repeated."""
    rows = [list(AGE_HEADER), list(AGE_ROW), [None] * len(AGE_HEADER)]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["cell", "cell", "cell", "drop-column", "repeat-row"]))
        row = draw(st.integers(0, len(rows) - 1))
        column = draw(st.integers(0, max(len(rows[row]) - 1, 0)))
        if kind == "cell":
            if rows[row]:
                rows[row][column] = draw(WORKBOOK_CELL)
        elif kind == "drop-column":
            for cells in rows:
                del cells[column:column + 1]
        else:
            rows.append(list(rows[row]))
    return rows


def write_workbook_folder(folder: Path, rows: list[list[object]], damage=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _sheet(folder / "vocabulary.xlsx",
           ["category", "subcategory", "name_es", "f_es", "information", "include_name"],
           ["Nationality", "", "España", "", "not-stereotyped", None])
    _sheet(folder / "vocabulary_proper_names.xlsx", ["proper_name_es", "gender", "ethnicity_es"], ["José", "m", "blanco"])
    _sheet(folder / "Age.xlsx", rows[0], *rows[1:])
    if damage is not None:
        name, damaged = damage
        (folder / name).write_bytes(damaged((folder / name).read_bytes()))
    return folder


@st.composite
def malformed_workbooks(draw):
    """The Age sheet's cells damaged, or now and then one workbook's bytes (a workbook that is not one)."""
    rows = draw(workbook_rows())
    if draw(st.integers(0, 3)):
        return rows, None
    return rows, (draw(st.sampled_from(["Age.xlsx", "vocabulary.xlsx", "vocabulary_proper_names.xlsx"])),
                  draw(BYTE_DAMAGE))


def check_workbooks(case) -> None:
    rows, damage = case
    with workspace() as root:
        write_workbook_folder(root / "templates", rows, damage)
        check_command(["validate", "templates", "--profile", "es"], root, outputs=[])
        check_command(["build", "--profile", "es", "--templates", "templates", "--quiet"], root, outputs=["build"])


@pytest.mark.parametrize("profile", FUZZ_PROFILES)
def test_malformed_template_workbooks(profile):
    fuzz(profile, malformed_workbooks(), check_workbooks, fast=5, long=100)
