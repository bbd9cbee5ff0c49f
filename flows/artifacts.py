"""What each stage decided, on its Prefect run: artifacts with stable keys, readable in the Prefect UI.

Keys are ``<release>-<stage>-<what>`` in lower case (``kobbq-survey-summary``, ``kobbq-release-table1``),
so the UI's Artifacts page keeps one history per release, stage and table, run after run:

- every stage: ``-summary`` (markdown: done / waiting / failed / unchanged, its summary and counts; a stage
  that waits says what it waits for and what to send out; the release its own summary and funnel), ``-rules``
  (table: each keep/drop rule's subjects kept and dropped, from its decisions), the tables the stage computed
  (``StageOutput.tables``: the labels' ``-agreement``, the survey's ``-funnel``, the release's ``-funnel``,
  ``-table1`` and ``-validation``) and its links (``StageOutput.links``: the release's ``-folder`` and
  ``-audit``).

Everything here is what the stage returned; nothing is read back or computed twice.
"""

from __future__ import annotations

import re
from pathlib import Path

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from core.decisions import Decision
from core.pipeline_file import StageState
from tasks.audit.report import markdown_table
from tasks.release.dataset_card import rule_counts
from tasks.stage_contract import StageOutput, Waiting


def artifact_key(release: str, stage: str, what: str) -> str:
    """Prefect keys hold lower-case letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9]+", "-", f"{release}-{stage}-{what}".lower()).strip("-")


def _rule_rows(decisions: list[Decision]) -> list[dict[str, object]]:
    return [{"stage": r.stage, "rule": r.rule, "judged": r.subjects, "kept": r.kept, "dropped": r.dropped,
             "overrides": r.overrides} for r in rule_counts(decisions)]


def publish_stage(release: str, stage: str, state: StageState, output: StageOutput | None = None,
                  waiting: Waiting | None = None) -> None:
    """A stage's artifacts: its summary (with what it waits for), its rules, its own tables and links."""
    lines = [f"## {release}: {stage}: {state.status}", "", state.message or "-", ""]
    if waiting is not None:
        lines += [f"**Waiting for:** {waiting.waits_for}", "", f"**To send out:** {waiting.send_out or '-'}", ""]
    if output is not None and output.text:
        lines += [output.text, ""]
    if state.counts:
        lines += markdown_table([{"count": k, "value": v} for k, v in state.counts.items()]) + [""]
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
    for name, path in sorted(output.links.items()):
        resolved = Path(path).resolve()
        create_link_artifact(key=artifact_key(release, stage, name), link=resolved.as_uri(), link_text=str(resolved),
                             description=f"{release}, stage {stage}: {name}")
