"""The pipeline's stages in the order they run, each as its contract (``core.stage_contract.Stage``): the files,
settings and stages it reads, the templates it renders and its module. Planning and ``kobbq status`` read the
contracts alone; a stage's module is imported only when it runs. ``tests/test_stage_contracts.py`` fails when a
stage reads what its contract omits.
"""

from __future__ import annotations

from pathlib import Path

from core.paths import AUDIT_TEMPLATES, CARD_TEMPLATES
from core.release_folder import release_problem
from core.stage_contract import Context, Stage
from tasks.release.inputs import BuildInputs
from tasks.survey.inputs import pipeline_inputs

RELEASE = "release"
MACHINE_TWIN = "mtBBQ"  # the unedited machine translation's release, beside the main one
# The profile settings reading a template file depends on (``tasks.templates.stage_templates``): every stage that
# reads one declares them, and the corrections among its inputs.
TEMPLATE_SETTINGS = ("templates", "categories", "particles", "release.unknown_expression", "writing")


def labels_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config.labels
    files = {"bbq": ctx.file(cfg.bbq), "consensus": ctx.file(cfg.consensus), "reference": ctx.file(cfg.reference),
             "corrections": ctx.corrections}
    files.update({f"annotations_{i}": p for i, p in enumerate(ctx.pipeline.files(cfg.annotations))})
    return files


def pretranslate_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config
    # The glossary (the drafts) and the translator's instructions (the workbooks): changing either makes it stale.
    return {"bbq": ctx.file(cfg.labels.bbq), "labels": ctx.output("labels", "labels"),
            "cache_seed": ctx.file(cfg.translation.cache), "glossary": ctx.glossary,
            "instructions": ctx.profile.file("postedit_instructions")}


def postedit_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config
    if ctx.pipeline.reference_mode:
        return {"reference": ctx.file(cfg.translation.reference), "bbq": ctx.file(cfg.labels.bbq),
                "corrections": ctx.corrections}
    workbooks = {f"workbook_{i}": ctx.file(path) for i, path in enumerate(cfg.translation.workbooks)}
    return {"returned": ctx.file(cfg.translation.returned), "sent": ctx.output("pretranslate", "workbooks"),
            **workbooks, "glossary": ctx.glossary}  # the substitutions the report and decisions name


def templates_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config.templates
    if ctx.pipeline.reference_mode:
        return {"reference": ctx.file(ctx.pipeline.config.translation.reference), "corrections": ctx.corrections}
    if ctx.profile.templates.workbook is not None:
        return {"postedit": ctx.output("postedit", "templates"), "corrections": ctx.corrections}
    return {"postedit": ctx.output("postedit", "templates"), "groups": ctx.file(cfg.groups),
            "newly_created": ctx.file(cfg.newly_created), "corrections": ctx.corrections}


def survey_export_inputs(ctx: Context) -> dict[str, Path | None]:
    # The profile's survey folder (the questionnaires' wording, the group lists): changing it makes them stale.
    return {"templates": ctx.templates_file(), "corrections": ctx.corrections,
            "survey_wording": ctx.profile.file("survey")}


def survey_inputs(ctx: Context) -> dict[str, Path | None]:
    # The profile's survey folder too: its group lists decide type-1 targets, its options the 'no stereotype' answer.
    return {"templates": ctx.templates_file(), "corrections": ctx.corrections, **pipeline_inputs(ctx).files(),
            "survey_profile": ctx.profile.file("survey")}


def build_inputs(ctx: Context) -> BuildInputs:
    """The release's inputs: templates, corrections, survey files, earlier stages' decisions and reports, twins."""
    config = ctx.pipeline.config
    survey = pipeline_inputs(ctx).files() if config.survey.results else {}
    extra = {**survey, **{f"decisions_{stage}": ctx.decisions_file(stage) for stage in earlier_stages(ctx)},
             **{f"parallel_{twin}": path for twin, path in twins(ctx).items()},
             **{f"report_{name}": path for name, path in reports(ctx).items()}}
    seed = ctx.profile.release.seed if config.seed is None else config.seed
    return BuildInputs(ctx.profile, ctx.templates_file() or Path("<templates not made yet>"), ctx.corrections, seed,
                       extra, config.test_split, ctx.fingerprints.get(RELEASE, ""))


def earlier_stages(ctx: Context) -> list[str]:
    """The earlier stages whose decisions the release merges: those that ran in this pipeline."""
    return [stage for stage in EARLIER if ("decisions", stage) in ctx.memo or ctx.decisions_file(stage).exists()]


def twins(ctx: Context) -> dict[str, Path]:
    machine = ctx.output("pretranslate", "mt_templates")
    return {MACHINE_TWIN: machine} if machine else {}


def reports(ctx: Context) -> dict[str, Path]:
    """Reports the earlier stages recorded (roles ``report:<name>``), to be copied into the release."""
    found = {}
    for stage in EARLIER:
        state = ctx.state(stage)
        for role in (state.outputs if state else ()):
            path = ctx.output(stage, role)
            if role.startswith("report:") and path is not None and path.exists():
                found[role.removeprefix("report:")] = path
    return found


def release_inputs(ctx: Context) -> dict[str, Path | None]:
    """Its input files by role, as the manifest lists them (``build_inputs``)."""
    return dict(build_inputs(ctx).files())


def release_made(ctx: Context, fingerprint: str) -> str | None:
    """The published release as its manifest records it, and built from this stage's inputs (``fingerprint``)."""
    return release_problem(ctx.folder.path, fingerprint, ctx.trust_record)


# The dataset card's and the audit page's templates.
RELEASE_TEMPLATES = tuple(sorted(path for folder in (CARD_TEMPLATES, AUDIT_TEMPLATES) for path in folder.glob("*.j2")))

# The stages before the release, whose decisions and reports it reads.
EARLIER_STAGES = [
    Stage("labels", labels_inputs, "tasks.labels.labels_stage",
          settings=(*TEMPLATE_SETTINGS, "labels", "pipeline.labels.categories", "pipeline.labels.not_taken")),
    Stage("pretranslate", pretranslate_inputs, "tasks.translation.pretranslate_stage",
          settings=(*TEMPLATE_SETTINGS, "translation", "culture"), after=("labels",), prepares=True,
          log="translation"),
    Stage("postedit", postedit_inputs, "tasks.translation.postedit_stage",
          settings=(*TEMPLATE_SETTINGS, "translation", "culture"), after=("pretranslate",)),
    Stage("templates", templates_inputs, "tasks.templates.templates_stage", settings=(*TEMPLATE_SETTINGS, "culture"),
          after=("postedit",), prepares=True),
    Stage("survey-export", survey_export_inputs, "tasks.survey.survey_export_stage",
          settings=(*TEMPLATE_SETTINGS, "survey.enabled", "survey.type1_categories", "survey.seed", "culture"),
          after=("templates",), prepares=True, log="survey"),
    Stage("survey", survey_inputs, "tasks.survey.survey_stage",
          settings=(*TEMPLATE_SETTINGS, "survey", "culture", "pipeline.survey.allow_unmatched"),
          after=("templates", "survey-export"), prepares=True, log="survey"),
]
EARLIER = tuple(stage.name for stage in EARLIER_STAGES)
STAGE_LIST = [
    *EARLIER_STAGES,
    Stage(RELEASE, release_inputs, "tasks.pipeline.release_stage",
          settings=("release", "templates", "categories", "table1_notes", "card", "culture", "particles", "files",
                    "survey", "evaluation", "writing", "description", "pipeline.seed", "pipeline.test_split"),
          after=EARLIER, prepares=True, made=release_made, renders=RELEASE_TEMPLATES),
]
STAGES = [stage.name for stage in STAGE_LIST]
STAGE_OF = {stage.name: stage for stage in STAGE_LIST}
