"""A template file as the pipeline's stages read it: loaded with the pipeline's corrections and checked once per
process while it is unchanged, so that every stage that reads it, and the release, share one parse (the profile
settings the reading depends on: ``tasks.pipeline.stages.TEMPLATE_SETTINGS``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from core import console
from core.findings import Finding
from core.stage_contract import Context
from tasks.templates.corrections import Correction, load_corrections
from tasks.templates.load import LoadedTemplates
from tasks.templates.validate import check_loaded, load_templates


def loaded_templates(ctx: Context, path: Path) -> LoadedTemplates:
    """The template file (or workbook folder), pipeline corrections applied, loaded once per process while unchanged."""
    stat = path.stat()
    key = ("loaded", path.resolve(), stat.st_mtime_ns, stat.st_size, ctx.corrections)
    return ctx.once(key, lambda: load_templates(path, ctx.profile, corrections(ctx)))


def corrections(ctx: Context) -> list[Correction]:
    """The pipeline's corrections, read once in this process (a stage's ``prepare`` reads them first)."""
    return ctx.once(("corrections", ctx.corrections), lambda: load_corrections(ctx.corrections) if ctx.corrections
                    else [])


def warnings_said(findings: list[Finding]) -> str:
    """How many warnings, of which kinds (a build lists none of them; ``kobbq validate`` does)."""
    kinds = Counter(f.code for f in findings if f.severity == "warning")
    if not kinds:
        return "0 warning(s)"
    return f"{sum(kinds.values())} warning(s): {', '.join(f'{code} {n}' for code, n in sorted(kinds.items()))}"


def checked_templates(ctx: Context, path: Path) -> tuple[LoadedTemplates, list[Finding]]:
    """``loaded_templates(ctx, path)``, checked once: an error stops the stage, every error listed; the findings."""
    templates = loaded_templates(ctx, path)

    def check() -> list[Finding]:
        findings = check_loaded(templates, path, ctx.profile)
        console.step(f"loaded {len(templates.templates)} template rows from {path.name} "
                     f"({len(templates.corrections)} correction(s) applied, {warnings_said(findings)})")
        return findings

    return templates, ctx.once(("checked", id(templates)), check)
