"""What each stage decided, on its Prefect run: artifacts with stable keys ``<release>-<folder>-<stage>-<what>``, so the
Artifacts page keeps one history per release folder, stage and table (docs/guides/server-or-pool.md). Everything here
is what the stage returned; nothing is read back or computed twice.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from core.pipeline_file import DONE
from core.stage_contract import Context
from tasks.audit.report import records_table
from tasks.pipeline.run import StageRun
from tasks.release.dataset_card import rule_counts


def artifact_key(ctx: Context, stage: str, what: str) -> str:
    """Prefect keys hold lower-case letters, digits and dashes only."""
    folder = hashlib.sha256(str(ctx.folder.path.resolve()).encode()).hexdigest()[:8]
    return re.sub(r"[^a-z0-9]+", "-", f"{ctx.name}-{folder}-{stage}-{what}".lower()).strip("-")


def publish_stage(ctx: Context, run: StageRun) -> None:
    """A stage's artifacts: its summary (with what it waits for), its rules, its own tables and links."""
    release, state, output, waiting = ctx.name, run.state, run.output, run.waiting
    stage = state.stage
    status = f"{DONE} (unchanged, skipped)" if run.check.current else state.status
    lines = [f"## {release}: {stage}: {status}", "", state.message or "-", ""]
    if waiting is not None:
        lines += [f"**Waiting for:** {waiting.waits_for}", "", f"**To send out:** {waiting.send_out or '-'}", ""]
    if output is not None and output.text:
        lines += [output.text, ""]
    if state.counts:
        lines += records_table([{"count": k, "value": v} for k, v in state.counts.items()]) + [""]
    if state.outputs:
        lines += ["Outputs:", ""] + [f"- {role}: `{path}`" for role, path in sorted(state.outputs.items())]
    create_markdown_artifact(key=artifact_key(ctx, stage, "summary"), markdown="\n".join(lines),
                             description=f"{release} ({ctx.folder.path}), stage {stage}: {status}")
    if output is None:
        return
    rules = [{"stage": r.stage, "rule": r.rule, "judged": r.subjects, "kept": r.kept, "dropped": r.dropped,
              "overrides": r.overrides} for r in rule_counts(output.decisions)]
    if rules:
        create_table_artifact(key=artifact_key(ctx, stage, "rules"), table=rules,
                              description=f"{release}, stage {stage}: subjects each rule kept and dropped")
    for name, table in sorted(output.tables.items()):
        create_table_artifact(key=artifact_key(ctx, stage, name), table=table,
                              description=f"{release}, stage {stage}: {name}")
    for name, path in sorted(output.links.items()):
        resolved = Path(path).resolve()
        create_link_artifact(key=artifact_key(ctx, stage, name), link=resolved.as_uri(), link_text=str(resolved),
                             description=f"{release}, stage {stage}: {name}")
