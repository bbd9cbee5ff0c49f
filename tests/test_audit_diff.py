"""``kobbq diff``: two template files (the real first and current KoBBQ files) and two releases.

Expected values come from the domain brief (76,544 vs 76,568 samples; religion 688 -> 712, i.e.
template 18 gained 24 samples; gender identity template 13 changed; three race rows written
as 'biased'), and from files edited by the test itself.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kobbq.cli import main
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release
from tasks.audit.report import write_release_folder
from tasks.release.inputs import BuildInputs
from tasks.templates.validate import load_checked
from tasks.audit.diff import ADDED, CHANGED, REMOVED, diff_releases, diff_template_files, render_diff


@pytest.fixture(scope="module")
def real_diff(kobbq_templates_first_tsv, kobbq_templates_tsv, ko_profile):
    return diff_template_files(kobbq_templates_first_tsv, kobbq_templates_tsv, ko_profile, DEFAULT_CORRECTIONS)


def test_first_and_current_kobbq_files(real_diff):
    changes = {c.subject: c for c in real_diff.changes}
    assert set(changes) == {"Religion|18", "Gender_identity|13"}
    religion = changes["Religion|18"]
    assert religion.status == CHANGED
    assert religion.samples_new - religion.samples_old == 712 - 688
    assert religion.samples_added == 24 and religion.samples_removed == 0
    assert changes["Gender_identity|13"].status == CHANGED
    assert not [c for c in real_diff.changes if c.status in (ADDED, REMOVED)]
    assert real_diff.unchanged == 269 - 2
    assert "76,544 samples" in real_diff.summary_old and "76,568 samples" in real_diff.summary_new


def test_corrections_only_the_first_file_needed(real_diff, kobbq_templates_first_tsv):
    with kobbq_templates_first_tsv.open(encoding="utf-8", newline="") as handle:
        biased = [r for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if r["version"] == "biased"]
    assert len(biased) == 3
    only_old = [n for n in real_diff.notes if n.startswith("only the old file needed a correction")]
    assert len(only_old) == 3
    for row in biased:
        assert any(f"{row['Category']}|{row['ID']}|biased version 'biased' -> 'b'" in n for n in only_old)
    assert not any(n.startswith("only the new file") for n in real_diff.notes)
    text = render_diff(real_diff)
    assert "Religion|18: samples 8 -> 32 (+24; 24 added, 0 removed, 8 changed)" in text


def _write_tsv(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _release(folder: Path, templates: Path, profile) -> Path:
    loaded, findings = load_checked(templates, None, profile)
    folder.mkdir(parents=True)
    write_release_folder(folder, BuildInputs(profile, templates, None, profile.release.seed), loaded, findings,
                         expand_release(loaded.templates, profile, profile.release.seed), decisions=[], validate=False)
    return folder


def test_edited_example_files_and_their_releases(tmp_path, ko_profile, capsys):
    """Remove one template and rename a filler of another: the diff says exactly that, for files and releases."""
    with EXAMPLE_TEMPLATES.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header, rows = list(reader.fieldnames or []), list(reader)
    kept = [dict(r) for r in rows if (r["Category"], r["ID"]) != ("SES", "1")]
    for row in kept:
        if (row["Category"], row["ID"]) == ("Age", "1"):
            for column in header:
                row[column] = row[column].replace("은행", "우체국")
    assert any("우체국" in r["Ambiguous_context"] for r in kept)
    old = _write_tsv(tmp_path / "old.tsv", header, rows)
    new = _write_tsv(tmp_path / "new.tsv", header, kept)

    files = diff_template_files(old, new, ko_profile, None)
    old_release, new_release = _release(tmp_path / "a" / "KoBBQ", old, ko_profile), _release(
        tmp_path / "b" / "KoBBQ", new, ko_profile)
    with (old_release / "KoBBQ_all_samples.tsv").open(encoding="utf-8", newline="") as handle:
        samples = [r for r in csv.DictReader(handle, delimiter="\t")]
    ses = sum(1 for r in samples if r["sample_id"].startswith("ses-001"))
    age_changed = sum(1 for r in samples if r["sample_id"].startswith("age-001") and "은행" in r["context"])
    assert ses > 0 and age_changed > 0

    releases = diff_releases(old_release, new_release, ko_profile)
    for diff in (files, releases):
        changes = {c.subject: c for c in diff.changes}
        assert set(changes) == {"SES|1", "Age|1"}
        assert changes["SES|1"].status == REMOVED and changes["SES|1"].samples_removed == ses
        assert changes["Age|1"].status == CHANGED
        assert changes["Age|1"].samples_changed == age_changed and changes["Age|1"].samples_added == 0
    assert any("Ambiguous_context" in d for d in {c.subject: c for c in files.changes}["Age|1"].details)

    assert main(["diff", str(old), str(new), "--no-corrections"]) == 0
    assert "Templates removed: 1\n  SES|1" in capsys.readouterr().out
    assert main(["diff", str(old), str(new_release)]) == 1
    assert "not a file with a folder" in capsys.readouterr().err
