"""The release stage, the last of every pipeline: the templates the survey's decisions keep (its rules never run
again) expanded, written, validated and published atomically; ``prepare`` fits the template file to the test split
before any flow run. What it reads is its contract's (``tasks.pipeline.stages``).
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from core import console, interrupt
from core.errors import UserError
from core.release_folder import AUDIT
from core.stage_contract import Context, StageOutput, Waiting
from tasks.audit.charts import import_library
from tasks.audit.report import write_release_folder
from tasks.release.assemble import ExpandedRelease, expand_release
from tasks.pipeline.stages import RELEASE, build_inputs, earlier_stages, reports, twins
from tasks.release.publish import publish, staged_release
from tasks.survey.survey_stage import survey_decisions, survivors
from tasks.templates.stage_templates import checked_templates

NAME = RELEASE


def expansion(ctx: Context) -> ExpandedRelease:
    """The release's sample sets, planned once: a template file that cannot produce the profile's listed test
    split stops here, before anything is written."""
    loaded, _ = checked_templates(ctx, template_file(ctx))

    def plan() -> ExpandedRelease:
        split = build_inputs(ctx).test_split
        rows = loaded.templates  # those the survey keeps (all of them without survey results)
        surviving = survivors(rows, survey_decisions(ctx)) if ctx.pipeline.config.survey.results else rows
        if not surviving:
            raise UserError(f"the survey kept none of the {len(loaded.templates)} template rows of "
                            f"{template_file(ctx).name}: nothing to release (its decisions and funnel.md say why each "
                            "was dropped)")
        release = expand_release(surviving, ctx.profile, split.seed, loaded.vocabulary, split)
        how = "generated" if release.generated is not None else "expanded chunk by chunk as they are written"
        console.step(f"expansion: {release.samples:,} samples ({len(release.test_indices):,} in the test split), {how}")
        return release

    return ctx.once(("expansion", id(loaded)), plan)


def prepare(ctx: Context) -> None:
    """Before the flow run: the charts' library imported, and the template file checked and fitted to the test split
    (unless an earlier stage of this run writes it or the survey's questions, or the survey waits)."""
    import_library()
    if ctx.pending & {"templates", "survey-export"}:
        return
    with suppress(Waiting):  # the survey's results are not there yet: the run says so at the survey stage
        expansion(ctx)


def template_file(ctx: Context) -> Path:
    path = ctx.templates_file()
    assert path is not None, "the release runs after the stage that makes its template file"
    return path


def run(ctx: Context) -> StageOutput:
    interrupt.checkpoint("loading")
    loaded, findings = checked_templates(ctx, template_file(ctx))
    release = expansion(ctx)  # planned before the flow run started, when its inputs were there
    interrupt.checkpoint("expansion")
    earlier = [decision for stage in earlier_stages(ctx) for decision in ctx.decisions(stage)]
    texts = {name: path.read_text(encoding="utf-8") for name, path in reports(ctx).items()}
    target = ctx.folder.path
    with staged_release(target, ctx.profile.name) as staging:
        written = write_release_folder(staging, build_inputs(ctx), loaded, findings, release, earlier,
                                       reports=texts, parallel=twins(ctx), progress=console.step)
        kept_files = publish(staging, target, written.manifest)
    console.step(f"validated and published {target}")
    if kept_files:
        console.step(f"kept what you added inside {target} (not part of the release): {', '.join(kept_files)}")
    interrupt.checkpoint("published")
    manifest = written.manifest
    counts = {"samples": manifest["samples"], "test_samples": manifest["test_samples"]}
    return StageOutput(counts, {}, [], summary(manifest), written.tables,
                       {"folder": target, "audit": target / AUDIT}, written.summary)


def summary(manifest: dict[str, object]) -> str:
    """The release in one line: a generated release (EsBBQ) evaluates every instance, so its test split is all."""
    samples, test = int(manifest["samples"]), int(manifest["test_samples"])  # type: ignore[call-overload]
    if test == 0 and manifest.get("test_split", {}).get("method") == "none":  # type: ignore[union-attr]
        return f"{samples:,} samples, every one of them in the test split (a generated release)"
    return f"{samples:,} samples, {test:,} in the test split"
