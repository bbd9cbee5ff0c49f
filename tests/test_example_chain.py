"""The embedded example is one chain: English BBQ templates -> labels -> recorded DeepL drafts ->
returned post-edit workbooks -> (with groups.csv and newly_created.tsv) exactly kobbq_example_templates.tsv.

The expected rows come from ``kobbq_example_templates.tsv`` itself (written by hand), never
from the code under test.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from openpyxl import load_workbook

from core.profile import load_profile
from core.paths import EXAMPLE_DIR, EXAMPLE_TEMPLATES
from tasks.templates.bbq import load_bbq_templates
from adapted import templates_to_adapt
from tasks.labels.consensus import load_consensus
from tasks.templates.templates_stage import import_newly_created
from tasks.templates.load import load_kobbq_templates
from tasks.translation.deepl_client import ReplayTranslator
from tasks.translation.glossary import profile_glossary
from tasks.translation.postedit import import_postedit
from tasks.translation.pretranslate import pretranslate
from tasks.translation.workbook import FOLLOWS, MANIFEST, export_postedit_workbooks

RETURNED = EXAMPLE_DIR / "translation" / "returned_chain"
CACHE = EXAMPLE_DIR / "translation" / "translation_cache.sqlite"
POSTEDIT_COLUMNS = ["Category", "ID", "version", "Label_annotation", "Stereotype", "Ambiguous_context",
                    "Disambiguating_context", "Names", "Lexical_diversity", "Biased_question",
                    "Counter-biased_question", "Biased_question_answer", "Counter-biased_question_answer",
                    "BBQ_id", "BBQ_category"]
KEY = ["Category", "ID", "version"]
GROUP_COLUMNS = ["N1_info", "N2_info", "Target_group", "Reference"]


def read_tsv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return list(reader.fieldnames or []), list(reader)


def keyed(rows: list[dict[str, str]], columns: list[str]) -> dict[tuple[str, ...], dict[str, str]]:
    return {tuple(r[c] for c in KEY): {c: r[c] for c in columns} for r in rows}


def manifest(path: Path) -> list[tuple]:
    """The locked cells as exported, without the Follows_version rows: the example's workbooks were returned before
    the export had them, and import as they always did."""
    return [row for row in load_workbook(path)[MANIFEST].iter_rows(values_only=True) if row[5] != FOLLOWS]


def test_returned_workbooks_import_to_the_adapted_rows_of_the_example(ko_profile, tmp_path):
    _, example = read_tsv(EXAMPLE_TEMPLATES)
    adapted = [r for r in example if r["Label_annotation"] in ("ST", "TM")]
    assert len(adapted) == 10  # Age 1 a/b, SES 1 a/b, Religion 1 a/b, Race_ethnicity_nationality 1 a-d

    workbooks = sorted(RETURNED.glob("postedit_*.xlsx"))
    result = import_postedit(workbooks, ko_profile, tmp_path / "postedit_templates.tsv", profile_glossary(load_profile("ko")))
    assert not result.findings and result.tsv_path is not None
    _, imported = read_tsv(result.tsv_path)
    assert keyed(imported, POSTEDIT_COLUMNS) == keyed(adapted, POSTEDIT_COLUMNS)
    assert [r["Target_group"] for r in imported] == [""] * len(imported)  # groups.csv supplies them

    # The rest of the example: groups.csv gives the group columns of the adapted rows,
    # newly_created.tsv is every NC row verbatim and imports as NC beside the adapted templates.
    with (EXAMPLE_DIR / "groups.csv").open(encoding="utf-8", newline="") as handle:
        groups = list(csv.DictReader(handle))
    assert keyed(groups, GROUP_COLUMNS) == keyed(adapted, GROUP_COLUMNS)
    header, example_header = read_tsv(EXAMPLE_DIR / "newly_created.tsv")[0], read_tsv(EXAMPLE_TEMPLATES)[0]
    _, newly_created = read_tsv(EXAMPLE_DIR / "newly_created.tsv")
    assert header == example_header
    assert newly_created == [r for r in example if r["Label_annotation"] == "NC"]
    assert set(POSTEDIT_COLUMNS) | set(GROUP_COLUMNS) | {"Target_group"} == set(example_header)
    nc = import_newly_created(EXAMPLE_DIR / "newly_created.tsv", ko_profile,
                              others=load_kobbq_templates(result.tsv_path).templates)
    assert not [f for f in nc.findings if f.severity == "error"]
    assert sorted(d.subject for d in nc.decisions) == ["Age|2", "Domestic_area_of_origin|1"]


def test_returned_workbooks_are_the_export_of_the_labelled_bbq_templates(ko_profile, tmp_path):
    """Replaying the shipped cache for the consensus's ST/TM templates exports exactly the workbooks returned."""
    templates, findings = load_bbq_templates(EXAMPLE_DIR / "bbq")
    assert not findings
    consensus = load_consensus(EXAMPLE_DIR / "labels" / "consensus.csv", templates,
                               ko_profile.labels.require_rationale)
    chosen = templates_to_adapt(templates, consensus)
    cache = tmp_path / "cache.sqlite"
    shutil.copy(CACHE, cache)
    drafts = pretranslate(chosen, ReplayTranslator(), cache, ko_profile, profile_glossary(load_profile("ko")))
    assert drafts.complete and drafts.chars_billed == 0 and not drafts.flagged
    labels = {s: f.label for s, f in consensus.labels.items()}
    exported = export_postedit_workbooks(drafts.drafts, tmp_path / "out", ko_profile, labels)
    assert sorted(p.name for p in exported) == sorted(p.name for p in RETURNED.glob("postedit_*.xlsx")) == [
        "postedit_Age.xlsx", "postedit_Race_ethnicity_nationality.xlsx", "postedit_Religion.xlsx", "postedit_SES.xlsx"]
    for path in exported:
        assert manifest(path) == manifest(RETURNED / path.name), path.name
