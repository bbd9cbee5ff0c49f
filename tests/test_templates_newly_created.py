"""Newly-created templates: imported with label NC after the same validation as every template."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from core.paths import EXAMPLE_TEMPLATES
from tasks.templates.templates_stage import import_newly_created
from core.findings import FindingsError
from tasks.templates.load import load_kobbq_templates, read_tsv


def nc_file(tmp_path: Path, edit=None) -> Path:
    """The NC templates of the embedded example (label NC, no BBQ link), optionally edited."""
    header, rows, _ = read_tsv(EXAMPLE_TEMPLATES)
    rows = [r for r in rows if r["Label_annotation"] == "NC"]
    assert len({(r["Category"], r["ID"]) for r in rows}) >= 2
    if edit:
        edit(rows)
    path = tmp_path / "nc.tsv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_nc_templates_get_one_decision_each(tmp_path: Path, ko_profile):
    path = nc_file(tmp_path)
    _, rows, _ = read_tsv(path)
    expected = sorted({f"{r['Category']}|{r['ID']}" for r in rows})
    imported = import_newly_created(path, ko_profile)
    assert sorted(d.subject for d in imported.decisions) == expected
    assert {d.outcome for d in imported.decisions} == {"NC"}
    assert len(imported.templates) == len(rows)


def test_wrong_label_link_and_template_errors_stop_the_import(tmp_path: Path, ko_profile):
    def edit(rows):
        rows[0]["Label_annotation"] = "ST"
        rows[1]["BBQ_id"], rows[1]["BBQ_category"] = "3", "Age"
        rows[1]["Names"] = rows[1]["Names"].replace("N2", "N3")  # the same check as any template: no N2

    with pytest.raises(FindingsError) as raised:
        import_newly_created(nc_file(tmp_path, edit), ko_profile)
    message = str(raised.value)
    assert "nc.tsv, row 2, column Label_annotation: label 'ST': a newly-created template is labelled NC" in message
    assert "row 3, column BBQ_id: links to BBQ Age 3" in message
    assert "row 3, column Names: Names does not declare N2" in message


def test_ids_must_not_clash_with_the_adapted_templates(tmp_path: Path, ko_profile):
    adapted = [t for t in load_kobbq_templates(EXAMPLE_TEMPLATES).templates if t.label != "NC"]
    taken = adapted[0]

    def edit(rows):
        for row in rows:
            if (row["Category"], row["ID"]) == (rows[0]["Category"], rows[0]["ID"]):
                row["Category"], row["ID"] = taken.category, str(taken.template_id)

    with pytest.raises(FindingsError, match=rf"{taken.category} template {taken.template_id} already exists"):
        import_newly_created(nc_file(tmp_path, edit), ko_profile, others=adapted)
