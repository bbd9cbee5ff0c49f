"""The postedit stage: the translator's returned workbooks become a template file in the target language.

Inputs: the workbooks the pretranslate stage sent out (``workbooks``) and the folder where the
returned ones are put. Outputs: ``templates`` (``postedit_templates.tsv``) and the post-edit
report. In real-data mode the released template file is the post-edit, linked to BBQ row by row.

``kobbq postedit import`` (the workbooks given one by one) and ``kobbq postedit reference`` run this stage alone
(a one-off run: its files in their ``--out``).
"""

from __future__ import annotations

from pathlib import Path

from core.atomic import write_text
from core.findings import raise_if_errors
from core.profile import Profile
from core.stage_contract import Context, Stage, StageOutput, Waiting, require
from tasks.templates.stage_templates import TEMPLATE_SETTINGS, checked_templates
from tasks.templates.bbq import load_bbq_templates
from tasks.templates.load import TemplateRow
from tasks.translation.glossary import Glossary
from tasks.translation.pretranslate_stage import glossary_file, glossary_of
from tasks.translation.postedit import ImportResult, import_postedit, render_report, templates_output
from tasks.translation.reference import ReferenceLinks, link_reference

NAME = "postedit"
REPORT = "postedit_report.md"


def import_returned(workbooks: list[Path], profile: Profile, folder: Path, glossary: Glossary,
                    sent: Path | None = None) -> tuple[ImportResult, Path | None]:
    """The returned workbooks as the profile's template format in ``folder`` (``postedit_templates.tsv``, or
    the folder ``postedit_templates`` of workbooks), and the post-edit report once something was imported;
    ``sent``: the workbooks of the current pre-translation, whose drafts the returned ones should hold."""
    result = import_postedit(workbooks, profile, templates_output(profile, folder, "postedit_templates"), glossary,
                             sent)
    report = write_text(Path(folder) / REPORT, render_report(result)) if result.tsv_path is not None else None
    return result, report


def link_released(templates: list[TemplateRow], bbq_path: Path, profile: Profile, glossary: Glossary) -> ReferenceLinks:
    """A released template file as the post-edit: its ST/TM rows linked to the BBQ templates they adapt."""
    bbq, _ = load_bbq_templates(bbq_path)
    return link_reference(templates, bbq, profile, glossary)


def inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config
    if ctx.pipeline.reference_mode:
        return {"reference": ctx.file(cfg.translation.reference), "bbq": ctx.file(cfg.labels.bbq),
                "corrections": ctx.corrections}
    workbooks = {f"workbook_{i}": ctx.file(path) for i, path in enumerate(cfg.translation.workbooks)}
    return {"returned": ctx.file(cfg.translation.returned), "sent": ctx.output("pretranslate", "workbooks"),
            **workbooks, "glossary": glossary_file(ctx)}  # the substitutions the report and decisions name


def returned_workbooks(ctx: Context) -> list[Path]:
    """The translator's workbooks: the ones the pipeline names one by one, else each workbook sent out, by its
    name in the folder they are returned to (waits for any not there yet)."""
    given = ctx.pipeline.config.translation.workbooks
    if given:
        return [ctx.file(path) for path in given]  # type: ignore[misc]
    sent_dir = ctx.output("pretranslate", "workbooks")
    sent = sorted(sent_dir.glob("*.xlsx")) if sent_dir else []
    returned_dir = ctx.file(ctx.pipeline.config.translation.returned)
    hint = (f"Send {', '.join(p.name for p in sent)} (in {sent[0].parent if sent else 'the work folder'}) to the "
            f"translator and put the returned workbooks, same names, in {returned_dir}.")
    require(returned_dir, "the translator's post-edited workbooks", hint)
    missing = [p.name for p in sent if not (returned_dir / p.name).exists()]
    if missing:
        raise Waiting(f"the translator's post-edited workbooks: {', '.join(missing)} not yet in {returned_dir}", hint)
    return [returned_dir / p.name for p in sent]  # type: ignore[operator]


def run(ctx: Context) -> StageOutput:
    if ctx.pipeline.reference_mode:
        return _from_reference(ctx)
    result, report = import_returned(returned_workbooks(ctx), ctx.profile, ctx.stage_dir(NAME), glossary_of(ctx),
                                     ctx.output("pretranslate", "workbooks"))
    raise_if_errors("the returned workbooks", result.findings, "nothing was imported")
    warnings = sum(1 for f in result.findings if f.severity == "warning")
    return StageOutput({"rows": len(result.rows)}, {"templates": result.tsv_path, f"report:{REPORT}": report},
                       result.decisions, f"{len(result.rows)} post-edited template rows imported"
                       + (f"; {warnings} warning(s), listed in {REPORT}" if warnings else ""))


def _from_reference(ctx: Context) -> StageOutput:
    """Real-data mode: the released template file is the post-edit; its rows are linked to BBQ."""
    cfg = ctx.pipeline.config
    reference = require(ctx.file(cfg.translation.reference), "reference post-edit", "")
    released = checked_templates(ctx, reference)[0].templates
    result = link_released(released, ctx.file(cfg.labels.bbq), ctx.profile, glossary_of(ctx))  # type: ignore[arg-type]
    counts = {"rows_linked": result.rows_linked, "rows": result.rows, "unlinked": len(result.unlinked)}
    return StageOutput(counts, {"templates": reference}, result.decisions,
                       f"{result.rows_linked} of {result.rows} ST/TM rows of {reference.name} linked to BBQ",
                       text=result.render(ctx.profile))


STAGE = Stage(NAME, inputs, run, settings=(*TEMPLATE_SETTINGS, "translation", "culture"), after=("pretranslate",))
