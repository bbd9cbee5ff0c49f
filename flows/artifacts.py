"""What each stage decided, on its Prefect run: artifacts with stable keys, readable in the Prefect UI.

Keys are ``<release>-<stage>-<what>`` in lower case (``kobbq-survey-summary``, ``kobbq-release-table1``),
so the UI's Artifacts page keeps one history per release, stage and table, run after run:

- every stage: ``-summary`` (markdown: done / waiting / failed / unchanged, its summary and counts; a stage
  that waits says what it waits for and what to send out), ``-rules`` (table: each keep/drop rule's
  subjects kept and dropped, from its decisions) and the tables the stage computed (``StageOutput.tables``:
  the labels' ``-agreement``, the survey's ``-funnel``);
- the release (the build flow): ``-summary``, tables ``-funnel`` (per category: templates in, dropped per
  rule, kept, samples, the paper's), ``-table1``, ``-validation``, and links ``-folder`` and ``-audit``.

Everything here reads what the stages and the release already wrote; nothing is computed twice.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from core.decisions import Decision
from core.pipeline_file import StageState
from core.profile import Profile
from tasks.audit.fates import load_audit_log
from tasks.audit.report import REPORT_NAME, funnel_rows
from tasks.release.checks import report_from_json
from tasks.release.dataset_card import rule_counts
from tasks.stage_contract import StageOutput, Waiting

RELEASE_STAGE = "release"


def artifact_key(release: str, stage: str, what: str) -> str:
    """Prefect keys hold lower-case letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9]+", "-", f"{release}-{stage}-{what}".lower()).strip("-")


def _markdown_table(rows: list[dict[str, object]]) -> list[str]:
    if not rows:
        return []
    header = list(rows[0])
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(row.get(c, "")).replace("|", "\\|") for c in header) + " |" for row in rows])


def _rule_rows(decisions: list[Decision]) -> list[dict[str, object]]:
    return [{"stage": r.stage, "rule": r.rule, "judged": r.subjects, "kept": r.kept, "dropped": r.dropped,
             "overrides": r.overrides} for r in rule_counts(decisions)]


def publish_stage(release: str, stage: str, state: StageState, output: StageOutput | None = None,
                  waiting: Waiting | None = None) -> None:
    """A people stage's artifacts: its summary (with what it waits for), its rules, its own tables."""
    lines = [f"## {release}: {stage}: {state.status}", "", state.message or "-", ""]
    if waiting is not None:
        lines += [f"**Waiting for:** {waiting.waits_for}", "", f"**To send out:** {waiting.send_out or '-'}", ""]
    if state.counts:
        lines += _markdown_table([{"count": k, "value": v} for k, v in state.counts.items()]) + [""]
    if state.outputs:
        lines += ["Outputs:", ""] + [f"- {role}: `{path}`" for role, path in sorted(state.outputs.items())]
    create_markdown_artifact(key=artifact_key(release, stage, "summary"), markdown="\n".join(lines),
                             description=f"{release}, stage {stage}: {state.status}")
    if output is None:
        return
    rules = _rule_rows(output.decisions)
    if rules:
        create_table_artifact(key=artifact_key(release, stage, "rules"), table=rules,
                              description=f"{release}, stage {stage}: subjects each rule kept and dropped")
    for name, table in sorted(output.tables.items()):
        create_table_artifact(key=artifact_key(release, stage, name), table=table,
                              description=f"{release}, stage {stage}: {name}")


def release_tables(release_dir: Path, profile: Profile) -> dict[str, list[dict[str, object]]]:
    """The release's tables: the funnel per category, Table 1, the validation result."""
    rules, funnel = funnel_rows(load_audit_log(release_dir, profile), profile)
    tables = {"funnel": [{"category": row.display, "templates in the log": row.templates,
                          **{f"dropped by {rule}": row.drops.get(rule, 0) for rule in rules},
                          "kept": row.released, "samples": row.samples,
                          "paper samples": "-" if row.paper_samples is None else row.paper_samples} for row in funnel]}
    table1 = release_dir / "table1.csv"
    if table1.exists():
        with table1.open(encoding="utf-8", newline="") as handle:
            tables["table1"] = list(csv.DictReader(handle))
    validation = release_dir / "validation.json"
    if validation.exists():
        report = report_from_json(json.loads(validation.read_text(encoding="utf-8")))
        tables["validation"] = [{"set": o.sample_set, "rule": o.rule, "expectation": o.expectation,
                                 "column": o.column, "result": "pass" if o.success else "FAIL",
                                 "rows breaking it": o.unexpected_count} for o in report.outcomes]
    return tables


def publish_release(release_dir: Path, profile: Profile, manifest: dict) -> None:
    """The release's artifacts: summary, funnel, Table 1, validation, and where the folder and report are
    (``manifest``: the one the build has just written)."""
    release_dir = Path(release_dir).resolve()
    release = str(manifest["release"])
    tables = release_tables(release_dir, profile)
    passed = sum(row["result"] == "pass" for row in tables.get("validation", []))
    differences = manifest.get("table1_differences", [])
    lines = [f"## {release}: {manifest['samples']:,} samples ({manifest['test_samples']:,} in the test split)", "",
             f"{manifest['template_ids']} template IDs ({manifest['template_rows']} rows) in "
             f"{len(manifest['categories'])} categories; paper: {manifest.get('paper_total_samples') or '-'} samples.",
             f"Validation: {passed} of {len(tables.get('validation', []))} expectations passed.",
             f"Table 1: {len(differences)} difference(s) from the paper, "
             f"{sum(1 for d in differences if not d['explained'])} not explained by the inputs.",
             "", f"Folder: `{release_dir}`; audit report: `{release_dir / REPORT_NAME}`; dataset card: "
                 f"`{release_dir / 'README.md'}`.", ""]
    lines += _markdown_table(tables["funnel"])
    create_markdown_artifact(key=artifact_key(release, RELEASE_STAGE, "summary"), markdown="\n".join(lines),
                             description=f"{release}: the release")
    for name, table in tables.items():
        create_table_artifact(key=artifact_key(release, RELEASE_STAGE, name), table=table,
                              description=f"{release}: {name}")
    create_link_artifact(key=artifact_key(release, RELEASE_STAGE, "folder"), link=release_dir.as_uri(),
                         link_text=str(release_dir), description=f"{release}: the release folder")
    create_link_artifact(key=artifact_key(release, RELEASE_STAGE, "audit"), link=(release_dir / REPORT_NAME).as_uri(),
                         link_text=f"{release} audit report", description=f"{release}: the offline audit report")
