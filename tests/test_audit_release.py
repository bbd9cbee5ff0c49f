"""Audit of a release: ``kobbq why`` lineage and the HTML audit report, on a real release.

The release is built from the real KoBBQ templates and survey results with the build's pure
steps (no Prefect). Expected values come from the release's own sample files and the input
files, read here independently of the audit code.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from core.errors import UserError
from core.paths import DEFAULT_CORRECTIONS, EXAMPLE_TEMPLATES
from tasks.release.assemble import expand_release
from tasks.audit.report import write_release_folder
from tasks.release.inputs import BuildInputs
from tasks.templates.validate import load_checked
from tasks.audit.fates import load_audit_log
from tasks.audit.lineage import explain, render_lineage
from core.release_folder import AUDIT
from tasks.survey.inputs import SurveyInputs
from tasks.survey.survey_stage import survey_stage


def build(folder: Path, templates: Path, profile, corrections: Path | None, survey: Path | None = None) -> Path:
    loaded, findings = load_checked(templates, corrections, profile)
    stage = survey_stage(loaded.templates, SurveyInputs(survey, allow_unmatched=True), profile) if survey else None
    release = expand_release(stage.kept if stage else loaded.templates, profile, profile.release.seed)
    folder.mkdir(parents=True)
    write_release_folder(folder, BuildInputs(profile, templates, corrections, profile.release.seed), loaded, findings,
                         release, decisions=stage.decisions if stage else [], reports=stage.reports if stage else None,
                         validate=False)
    return folder


@pytest.fixture(scope="module")
def real_release(tmp_path_factory, kobbq_templates_tsv, survey_result_json, ko_profile) -> Path:
    return build(tmp_path_factory.mktemp("audit") / "KoBBQ", kobbq_templates_tsv, ko_profile, DEFAULT_CORRECTIONS,
                 survey_result_json)


@pytest.fixture(scope="module")
def real_log(real_release, ko_profile):
    return load_audit_log(real_release)


@pytest.fixture(scope="module")
def released_ids(real_release) -> list[str]:
    with (real_release / "KoBBQ_all_samples.tsv").open(encoding="utf-8", newline="") as handle:
        return [row["sample_id"] for row in csv.DictReader(handle, delimiter="\t")]


def decision_rows(release: Path) -> list[dict[str, str]]:
    with (release / "decisions.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


# --- kobbq why ------------------------------------------------------------------------------------

def test_released_template_counts_its_samples(real_log, ko_profile, released_ids):
    text = render_lineage(explain("race_ethnicity_nationality-027", real_log, ko_profile))
    samples = sum(1 for s in released_ids if s.startswith("race_ethnicity_nationality-027"))
    assert samples > 0
    assert text.startswith(f"Race_ethnicity_nationality|27: IN THE RELEASE ({samples:,} samples)")
    same = render_lineage(explain("Race_ethnicity_nationality|27", real_log, ko_profile))
    assert same == text


def test_bbq_link_matches_the_template_file(real_log, ko_profile, kobbq_templates_tsv):
    with kobbq_templates_tsv.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    row = next(r for r in rows if r["Category"] == "Race_ethnicity_nationality" and r["ID"] == "27")
    bbq = f"bbq:{row['BBQ_category']}:{row['BBQ_id']}"
    text = render_lineage(explain("race_ethnicity_nationality-027", real_log, ko_profile))
    assert f"BBQ source  {bbq}" in text
    linked = render_lineage(explain(bbq.lower(), real_log, ko_profile))
    assert "Race_ethnicity_nationality|27 (race_ethnicity_nationality-027" in linked


def test_dropped_template_shows_the_rule_and_numbers_first(real_release, real_log, ko_profile, released_ids):
    rows = decision_rows(real_release)
    dropped = next(r for r in rows if r["subject_type"] == "template" and r["outcome"] == "drop")
    stereotype_rule = dropped["numbers"].split('"stereotype_rule": "')[1].split('"')[0]
    category, template_id = dropped["subject"].split("|")
    prefix = ko_profile.category(category).sample_prefix
    assert not any(s.startswith(f"{prefix}-{int(template_id):03d}") for s in released_ids)
    lines = render_lineage(explain(dropped["subject"], real_log, ko_profile)).splitlines()
    assert lines[0] == f"{dropped['subject']}: DROPPED by survey: {stereotype_rule}"
    assert lines[2] == "Dropped by:"
    assert lines[3].startswith(f"  survey: {stereotype_rule} -> drop")  # the deciding rule first, as the status
    own = next(i for i, line in enumerate(lines) if line.startswith(f"  survey: {dropped['rule']} -> drop"))
    assert 3 < own < 12 and dropped["reason"] in lines[own + 1]
    assert lines.index("Dropped by:") < next(i for i, line in enumerate(lines) if "samples" in line)


def test_sample_id_lineage(real_release, real_log, ko_profile, released_ids):
    with (real_release / "KoBBQ_test_samples.tsv").open(encoding="utf-8", newline="") as handle:
        test_ids = {row["sample_id"] for row in csv.DictReader(handle, delimiter="\t")}
    in_test = next(s for s in released_ids if s in test_ids and s.startswith("age-"))
    not_in_test = next(s for s in released_ids if s not in test_ids and s.startswith("age-"))
    assert "in the evaluation split too" in render_lineage(explain(in_test, real_log, ko_profile))
    text = render_lineage(explain(not_in_test, real_log, ko_profile))
    assert text.startswith(f"{not_in_test}: IN THE RELEASE")
    assert "not in the evaluation split" in text
    row = "-".join(not_in_test.split("-")[:2])  # age-001a
    fills = sum(1 for s in released_ids if s.startswith(f"{row}-") and s.endswith("-amb-bsd"))
    with pytest.raises(UserError, match=f"has {fills} fill"):
        explain(f"{row}-{fills + 1:03d}-amb-bsd", real_log, ko_profile)


def test_stereotype_lineage_lists_its_templates(real_log, ko_profile, kobbq_templates_tsv):
    with kobbq_templates_tsv.open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                if r["Category"] == "Religion" and r["Stereotype"] == "타종교에 배타적임"]
    ids = sorted({int(r["ID"]) for r in rows})
    text = render_lineage(explain("타종교에 배타적임", real_log, ko_profile))
    for template_id in ids:
        assert f"Religion|{template_id} (religion-{template_id:03d})" in text


def test_unknown_ids_name_the_closest_matches(real_log, ko_profile):
    with pytest.raises(UserError, match="closest: .*age-009"):
        explain("age-099", real_log, ko_profile)
    with pytest.raises(UserError, match="closest: .*타종교에 배타적임"):
        explain("타종교에 배타적", real_log, ko_profile)
    with pytest.raises(UserError, match="not in the decision log"):
        explain("bbq:Religion:999", real_log, ko_profile)


def test_why_command(real_release):
    kobbq = [sys.executable, "-m", "kobbq"]
    done = subprocess.run([*kobbq, "why", "religion-018", "--release", str(real_release)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Religion|18: IN THE RELEASE")
    failed = subprocess.run([*kobbq, "why", "religion-999", "--release", str(real_release)], capture_output=True,
                            text=True, timeout=60)
    assert failed.returncode == 1
    assert failed.stderr.startswith("error: template 'religion-999'") and "Traceback" not in failed.stderr


# --- the HTML report ------------------------------------------------------------------------------

class Page(HTMLParser):
    """What the checks need from the report: elements by id/class, scripts, external references, text."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.sections: list[str] = []
        self.template_rows = 0
        self.scripts = 0
        self.external: list[str] = []
        self.inputs: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        self.attributes.extend(v for v in values.values() if v)
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "section":
            self.sections.append(values.get("id") or "")
        if tag == "tr" and "template" in (values.get("class") or "").split():
            self.template_rows += 1
        if tag == "script":
            self.scripts += 1
            assert "src" not in values
        if tag == "input":
            self.inputs.append(values)
        for name in ("src", "href"):
            if (values.get(name) or "").startswith(("http:", "https:", "//")):
                self.external.append(values[name])
        if tag == "link":
            self.external.append(str(values))

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_report_on_the_real_release(real_release, ko_profile, kobbq_templates_tsv):
    page = parse(real_release / AUDIT)  # as the build wrote it
    with kobbq_templates_tsv.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    categories = {r["Category"] for r in rows}
    assert len(categories) == 12
    assert sorted(page.sections) == sorted(c.lower() for c in categories)
    assert page.template_rows == len({(r["Category"], r["ID"]) for r in rows})  # 269: every fate, kept or dropped
    assert any(i.get("id") == "search" and i.get("type") == "search" for i in page.inputs)
    assert page.scripts == 1 and page.external == []
    assert {"funnel", "table1"} <= page.ids
    text = "".join(page.text)
    assert "Survey funnel (funnel.md" in text and "Each rule's own effect" in text  # funnel.md embedded
    assert "51,856" in text  # the paper's race samples, from table1.csv
    assert not list(real_release.glob(".audit.html.*"))  # no temporary file left behind


def test_report_escapes_text_from_input_files(tmp_path, ko_profile):
    """A stereotype and a correction reason with markup end up as text, never as elements."""
    templates = tmp_path / "malicious.tsv"
    templates.write_text(EXAMPLE_TEMPLATES.read_text(encoding="utf-8"), encoding="utf-8")
    script, image = "<script>alert(1)</script>", '<img src=x onerror="alert(2)">'
    corrections = tmp_path / "corrections.csv"
    with corrections.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "row_key", "column", "old_value", "new_value", "reason"])
        writer.writerow(["malicious.tsv", "Age|1|a", "Stereotype", "기술 사용의 어려움", script, f"{image} & more"])
    release = build(tmp_path / "KoBBQ", templates, ko_profile, corrections)
    page = parse(release / AUDIT)
    assert page.scripts == 1  # only the report's own search script
    text = "".join(page.text)
    assert script in text and f"{image} & more" in text  # shown literally, as text
    assert "x" not in page.attributes  # no <img src=x> element was created
    raw = (release / AUDIT).read_text(encoding="utf-8")
    assert "<script>alert(1)" not in raw and "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
