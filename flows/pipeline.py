"""One flow from English BBQ templates to the release, with people in the loop.

Stages, in order: labels -> pretranslate -> postedit -> templates -> survey-export -> survey ->
release. Each is a Prefect task; each records its state (``tasks.pipeline``) and writes its
decisions into its work folder, so a re-run skips every stage whose inputs did not change and
the release's decision log gathers them all. The first stage that waits for people (the
annotators' consensus, the translator's workbooks, the survey results, or a DeepL key for
segments not yet paid for) stops the run, saying what it waits for and what to send out.
"""

from __future__ import annotations

import csv
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

import kobbq
from kobbq import console
from kobbq.errors import Location, UserError
from kobbq.profile import Profile, load_profile
from tasks.atomic import replacing, write_text, write_with
from tasks.bbq import load_bbq_templates
from tasks.corrections import load_corrections
from tasks.decisions import Decision, write_decisions_csv
from tasks.pipeline import (DONE, FAILED, STAGES, WAITING, Pipeline, StageState, is_current, read_state, state_dir,
                            write_state)
from tasks.release import files_fingerprint
from tasks.tables import read_csv_table
from tasks.templates import Template, load_kobbq_templates, read_tsv


MT_TEMPLATES = "mtBBQ_templates.tsv"  # the unedited machine translation, expanded into a twin release


class Waiting(Exception):
    """A stage cannot run until people deliver something; the message says what and how."""


@dataclass
class Context:
    pipeline: Pipeline
    profile: Profile
    out: Path
    name: str
    upstream: dict[str, Path] = field(default_factory=dict)  # stage -> its decisions file

    @property
    def work(self) -> Path:
        return self.out / f"{self.name}.work"

    @property
    def states(self) -> Path:
        return state_dir(self.out, self.name)

    def stage_dir(self, stage: str) -> Path:
        folder = self.work / stage
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def file(self, value: str) -> Path | None:
        return self.pipeline.file(value)

    @property
    def corrections(self) -> Path | None:
        return self.file(self.pipeline.config.templates.corrections)

    def templates(self, path: Path) -> list[Template]:
        """A KoBBQ-format template file read with the pipeline's corrections applied."""
        corrections = load_corrections(self.corrections) if self.corrections else []
        return load_kobbq_templates(path, corrections).templates


@dataclass(frozen=True)
class StageOutput:
    counts: dict[str, object]
    outputs: dict[str, Path]
    decisions: list[Decision]
    summary: str


def save_decisions(ctx: Context, stage: str, decisions: list[Decision]) -> Path:
    return write_with(ctx.stage_dir(stage) / "decisions.csv", lambda path: write_decisions_csv(decisions, path))


def write_csv_rows(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with replacing(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def write_tsv_rows(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with replacing(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n",
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def require(path: Path | None, what: str, hint: str) -> Path:
    if path is None:
        raise Waiting(f"{what}: not configured in the pipeline file. {hint}")
    if not path.exists():
        raise Waiting(f"{what}: {path} does not exist yet. {hint}")
    return path


# --- the stages -------------------------------------------------------------------------------

def labels_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config.labels
    files = {"bbq": ctx.file(cfg.bbq), "consensus": ctx.file(cfg.consensus), "reference": ctx.file(cfg.reference),
             "corrections": ctx.corrections}
    files.update({f"annotations_{i}": p for i, p in enumerate(ctx.pipeline.files(cfg.annotations))})
    return files


def run_labels(ctx: Context) -> StageOutput:
    cfg = ctx.pipeline.config.labels
    bbq_path = require(ctx.file(cfg.bbq), "English BBQ templates", "Set labels.bbq to their folder.")
    if cfg.reference:
        from tasks.labels.reference import reference_labels

        reference = require(ctx.file(cfg.reference), "reference template file", "")
        bbq, _ = load_bbq_templates(bbq_path)
        result = reference_labels(ctx.templates(reference), bbq, ctx.profile)
        report = write_text(ctx.stage_dir("labels") / "reference_labels.txt", result.text + "\n")
        outcomes = Counter(d.outcome.split(":")[0] for d in result.decisions)
        return StageOutput(dict(sorted(outcomes.items())), {"report:labels_reference.txt": report}, result.decisions,
                           f"labels from the release's BBQ links: {dict(sorted(outcomes.items()))}")
    from tasks.labels.agreement import agreement, format_agreement
    from tasks.labels.annotations import import_annotations, votes_by_template
    from tasks.labels.consensus import load_consensus, require_final_labels
    from tasks.labels.template_set import load_label_items

    consensus_path = require(ctx.file(cfg.consensus), "annotators' labels (the consensus file)",
                             f"Send the workbooks of `kobbq labels export --bbq {bbq_path} --annotator NAME ...` to "
                             "the annotators, compare their answers with `kobbq labels import FILES --draft`, and "
                             "write the final label and rationale of every template into the consensus file.")
    bbq, items = load_label_items(bbq_path, ctx.profile)
    folder = ctx.stage_dir("labels")
    votes = None
    outputs: dict[str, Path] = {}
    annotation_files = ctx.pipeline.files(cfg.annotations)
    if annotation_files:
        annotators = import_annotations(annotation_files, items, ctx.profile.labels.require_rationale)
        outputs["report:labels_agreement.txt"] = write_text(
            folder / "agreement.txt", format_agreement(agreement(annotators, items)) + "\n")
        votes = votes_by_template(annotators)
    consensus = load_consensus(consensus_path, bbq, ctx.profile.labels.require_rationale, annotations=votes)
    require_final_labels(bbq, consensus)
    labels_csv = folder / "labels.csv"
    write_csv_rows(labels_csv, ["subject", "label", "rationale"],
                   [[s, f.label, f.rationale] for s, f in sorted(consensus.labels.items())])
    counts = dict(sorted(Counter(f.label for f in consensus.labels.values()).items()))
    return StageOutput(counts, {"labels": labels_csv, **outputs}, consensus.decisions,
                       f"final labels {counts} from {len(annotation_files)} annotator file(s) and the consensus")


def pretranslate_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config
    return {"bbq": ctx.file(cfg.labels.bbq), "labels": ctx.work / "labels" / "labels.csv",
            "cache_seed": ctx.file(cfg.translation.cache), "glossary": glossary_path(ctx)}


def glossary_path(ctx: Context) -> Path:
    from tasks.translation.glossary import GLOSSARY_DIR

    return GLOSSARY_DIR / f"{ctx.profile.name}.csv"


def run_pretranslate(ctx: Context) -> StageOutput:
    if ctx.pipeline.reference_mode:
        return StageOutput({"segments": 0}, {}, [], "reference mode: the released file is the post-edit; no DeepL")
    from tasks.translation.deepl_client import KEY_VARIABLE, ReplayTranslator, translator_from_environment
    from tasks.translation.glossary import profile_glossary
    from tasks.translation.postedit import write_machine_translation
    from tasks.translation.pretranslate import load_labels, pretranslate, translatable
    from tasks.translation.workbook import export_postedit_workbooks

    folder = ctx.stage_dir("pretranslate")
    cache = folder / "translation_cache.sqlite"
    seed = ctx.file(ctx.pipeline.config.translation.cache)
    if not cache.exists() and seed is not None and seed.exists():
        shutil.copyfile(seed, cache)  # the shipped recording is never written to; paid work lives here
    bbq, _ = load_bbq_templates(ctx.file(ctx.pipeline.config.labels.bbq))
    labels = load_labels(ctx.work / "labels" / "labels.csv")
    templates = translatable(bbq, labels, ctx.profile)
    live = bool(os.environ.get(KEY_VARIABLE))
    translator = translator_from_environment() if live else ReplayTranslator()
    glossary = profile_glossary(ctx.profile.name)
    result = pretranslate(templates, translator, cache, ctx.profile, glossary)
    if not result.complete:
        labels_path = ctx.work / "labels" / "labels.csv"
        raise Waiting(f"DeepL: {result.segments_left} segment(s) are not in the translation cache {cache}"
                      f"{'' if live else f' and {KEY_VARIABLE} is not set'}. Set {KEY_VARIABLE} and re-run; "
                      f"`kobbq translate --dry-run --bbq {ctx.file(ctx.pipeline.config.labels.bbq)} --labels "
                      f"{labels_path} --cache {cache}` prints the characters and the cost first. "
                      "Everything already translated is kept.")
    workbooks = export_postedit_workbooks(result.drafts, folder / "postedit_out", ctx.profile, labels)
    machine = write_machine_translation(result.drafts, ctx.profile, labels, folder / MT_TEMPLATES)
    counts = {"rows": len(templates), "segments": result.segments, "chars_billed": result.chars_billed,
              "chars_from_cache": result.chars_from_cache, "workbooks": len(workbooks),
              "mt_rows": len(machine.rows) if machine.tsv_path else 0}
    outputs = {"workbooks": folder / "postedit_out"}
    if machine.tsv_path:
        outputs["mt_templates"] = machine.tsv_path
    return StageOutput(counts, outputs, result.decisions,
                       f"{len(templates)} BBQ rows drafted; {len(workbooks)} post-edit workbook(s) to send out")


def postedit_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config
    if ctx.pipeline.reference_mode:
        return {"reference": ctx.file(cfg.translation.reference), "bbq": ctx.file(cfg.labels.bbq),
                "corrections": ctx.corrections}
    return {"returned": ctx.file(cfg.translation.returned), "sent": ctx.work / "pretranslate" / "postedit_out"}


def run_postedit(ctx: Context) -> StageOutput:
    from tasks.translation.glossary import profile_glossary

    glossary = profile_glossary(ctx.profile.name)
    cfg = ctx.pipeline.config
    if ctx.pipeline.reference_mode:
        from tasks.translation.reference import link_reference

        reference = require(ctx.file(cfg.translation.reference), "reference post-edit", "")
        bbq, _ = load_bbq_templates(ctx.file(cfg.labels.bbq))
        result = link_reference(ctx.templates(reference), bbq, ctx.profile, glossary)
        counts = {"rows_linked": result.rows_linked, "rows": result.rows, "unlinked": len(result.unlinked)}
        return StageOutput(counts, {"templates": reference}, result.decisions,
                           f"{result.rows_linked} of {result.rows} ST/TM rows of {reference.name} linked to BBQ")
    from tasks.translation.postedit import import_postedit, render_report

    sent = sorted((ctx.work / "pretranslate" / "postedit_out").glob("*.xlsx"))
    returned_dir = ctx.file(cfg.translation.returned)
    hint = (f"Send {', '.join(p.name for p in sent)} (in {sent[0].parent if sent else 'the work folder'}) to the "
            f"translator and put the returned workbooks, same names, in {returned_dir}.")
    require(returned_dir, "the translator's post-edited workbooks", hint)
    missing = [p.name for p in sent if not (returned_dir / p.name).exists()]
    if missing:
        raise Waiting(f"the translator's post-edited workbooks: {', '.join(missing)} not yet in {returned_dir}. {hint}")
    folder = ctx.stage_dir("postedit")
    result = import_postedit([returned_dir / p.name for p in sent], ctx.profile, folder / "postedit_templates.tsv",
                             glossary)
    report = write_text(folder / "postedit_report.md", render_report(result))
    errors = [f for f in result.findings if f.severity == "error"]
    if result.tsv_path is None or errors:
        listed = "\n".join(f"  {f.render()}" for f in errors[:30])
        raise UserError(f"{len(errors)} problem(s) in the returned workbooks; nothing imported:\n{listed}")
    return StageOutput({"rows": len(result.rows)}, {"templates": result.tsv_path, "report:postedit_report.md": report},
                       result.decisions,
                       f"{len(result.rows)} post-edited template rows imported")


GROUP_COLUMNS = ["N1_info", "N2_info", "Target_group", "Reference"]


def templates_inputs(ctx: Context) -> dict[str, Path | None]:
    cfg = ctx.pipeline.config.templates
    if ctx.pipeline.reference_mode:
        return {"reference": ctx.file(ctx.pipeline.config.translation.reference), "corrections": ctx.corrections}
    return {"postedit": ctx.work / "postedit" / "postedit_templates.tsv", "groups": ctx.file(cfg.groups),
            "newly_created": ctx.file(cfg.newly_created), "corrections": ctx.corrections}


def merge_groups(rows: list[dict[str, str]], groups_path: Path) -> list[dict[str, str]]:
    """Add the groups (N1_info, N2_info, Target_group, Reference) that the post-edit does not carry."""
    table: dict[tuple[str, str, str], dict[str, str]] = {}
    for line, row in read_csv_table(groups_path, ["Category", "ID", "version", *GROUP_COLUMNS], "a groups file"):
        key = (row["Category"].strip(), row["ID"].strip(), row["version"].strip())
        if key in table:
            raise UserError(f"template row {'|'.join(key)} already has groups above", Location(str(groups_path), line, "ID"))
        table[key] = row
    merged = []
    for row in rows:
        key = (row["Category"], row["ID"], row["version"])
        if key not in table:
            raise UserError(f"no groups for template row {'|'.join(key)}; add a row with "
                            f"{', '.join(GROUP_COLUMNS)}", groups_path)
        merged.append({**row, **{c: table[key].get(c, "") for c in GROUP_COLUMNS}})
    return merged


def run_templates(ctx: Context) -> StageOutput:
    from tasks.assemble import load_checked

    if ctx.pipeline.reference_mode:
        reference = ctx.file(ctx.pipeline.config.translation.reference)
        loaded, _ = load_checked(reference, ctx.corrections, ctx.profile)
        return StageOutput({"rows": len(loaded.templates)}, {"templates": reference}, [],
                           f"{len(loaded.templates)} template rows: the released file")
    from tasks.labels.newly_created import import_newly_created

    cfg = ctx.pipeline.config.templates
    header, rows, _ = read_tsv(ctx.work / "postedit" / "postedit_templates.tsv")
    groups = require(ctx.file(cfg.groups), "template groups (N1_info, N2_info, Target_group per row)",
                     "Write them for every post-edited template row.")
    rows = merge_groups(rows, groups)
    decisions: list[Decision] = []
    if cfg.newly_created:
        nc_path = require(ctx.file(cfg.newly_created), "newly-created templates", "")
        adapted = load_kobbq_templates(ctx.work / "postedit" / "postedit_templates.tsv").templates
        imported = import_newly_created(nc_path, ctx.profile, others=adapted)
        decisions += imported.decisions
        nc_header, nc_rows, _ = read_tsv(nc_path)
        header += [c for c in nc_header if c not in header]
        rows += nc_rows
    header += [c for c in GROUP_COLUMNS if c not in header]
    path = ctx.stage_dir("templates") / "templates.tsv"
    write_tsv_rows(path, header, rows)
    loaded, _ = load_checked(path, None, ctx.profile)
    labels = dict(sorted(Counter(t.label for t in loaded.templates).items()))
    return StageOutput({"rows": len(loaded.templates), **labels}, {"templates": path}, decisions,
                       f"{len(loaded.templates)} template rows ({labels}) in {path.name}")


def templates_file(ctx: Context) -> Path | None:
    """The template file the templates stage produced; None before it has run (a fingerprint then
    records it as missing)."""
    state = read_state(ctx.states, "templates")
    output = state.outputs.get("templates") if state else None
    return Path(output) if output else None


def survey_export_inputs(ctx: Context) -> dict[str, Path | None]:
    return {"templates": templates_file(ctx)}


def run_survey_export(ctx: Context) -> StageOutput:
    from flows.survey import export_task

    templates = ctx.templates(templates_file(ctx))
    folder = ctx.stage_dir("survey-export")
    result = export_task.fn(templates, ctx.profile, folder)
    counts = {k: v for k, v in vars(result).items() if isinstance(v, int)}
    return StageOutput(counts, {"questionnaire": folder / "questionnaire.xlsx"}, list(result.decisions),
                       f"questionnaires for {counts} written to {folder}")


def survey_inputs(ctx: Context):
    from tasks.survey_stage import SurveyInputs

    cfg = ctx.pipeline.config.survey
    exported = ctx.work / "survey-export" / "questions.csv"  # what this pipeline sent out, by default
    questions = ctx.file(cfg.questions) or (exported if exported.exists() else None)
    return SurveyInputs(results=ctx.file(cfg.results), reading=ctx.file(cfg.reading),
                        overrides=ctx.file(cfg.overrides), questions=questions).resolve(ctx.profile)


def survey_stage_inputs(ctx: Context) -> dict[str, Path | None]:
    return {"templates": templates_file(ctx), **survey_inputs(ctx).files()}


def run_survey(ctx: Context) -> StageOutput:
    from tasks.survey_stage import survey_stage

    files = survey_inputs(ctx)
    questionnaire = ctx.work / "survey-export" / "questionnaire.xlsx"
    require(files.results, "survey results",
            f"Send {questionnaire} (also `kobbq survey export`) to the survey company and put the results "
            "(respondent-level CSV/xlsx, or the aggregated JSON) where survey.results points.")
    templates = ctx.templates(templates_file(ctx))
    stage = survey_stage(templates, files, ctx.profile)
    folder = ctx.stage_dir("survey")
    for name, text in stage.reports.items():
        write_text(folder / name, text)
    ids, kept = len({t.template_key for t in templates}), len({t.template_key for t in stage.kept})
    return StageOutput({"template_ids": ids, "kept": kept}, {"funnel": folder / "funnel.md"}, [],
                       f"{kept} of {ids} template IDs pass the survey filters")


@dataclass(frozen=True)
class Stage:
    name: str
    inputs: Callable[[Context], dict[str, Path | None]]
    run: Callable[[Context], StageOutput]


PEOPLE_STAGES = [
    Stage("labels", labels_inputs, run_labels),
    Stage("pretranslate", pretranslate_inputs, run_pretranslate),
    Stage("postedit", postedit_inputs, run_postedit),
    Stage("templates", templates_inputs, run_templates),
    Stage("survey-export", survey_export_inputs, run_survey_export),
    Stage("survey", survey_stage_inputs, run_survey),
]
assert [s.name for s in PEOPLE_STAGES] + ["release"] == STAGES


def stage_fingerprint(ctx: Context, stage: Stage) -> str:
    upstream = {f"decisions_{name}": path for name, path in ctx.upstream.items()}
    # The project version, not a hash of loaded code: ``kobbq status`` runs in another process with
    # other modules loaded and must compute the same fingerprint. The release stage hashes its code.
    return files_fingerprint({**stage.inputs(ctx), **upstream, "profile": ctx.profile.path}, extra=kobbq.__version__)


@task(name="pipeline-stage", cache_policy=NO_CACHE, task_run_name="{stage.name}")
def run_stage(ctx: Context, stage: Stage) -> str:
    """Run one stage unless it is current; its status (done, waiting, failed).

    A user error (a bad input file) is recorded as the stage's failure and returned, not raised:
    the command prints it in one paragraph, without a Prefect traceback.
    """
    current = stage_fingerprint(ctx, stage)
    state = read_state(ctx.states, stage.name)
    if is_current(state, current):
        console.step(f"{stage.name}: unchanged, skipped ({state.message})")
        ctx.upstream[stage.name] = ctx.work / stage.name / "decisions.csv"
        return DONE
    try:
        output = stage.run(ctx)
    except Waiting as waiting:
        write_state(ctx.states, StageState(stage.name, WAITING, current, str(waiting)))
        console.step(f"{stage.name}: WAITING: {waiting}")
        return WAITING
    except UserError as error:
        write_state(ctx.states, StageState(stage.name, FAILED, current, error.render()))
        console.step(f"{stage.name}: FAILED")
        return FAILED
    decisions_path = save_decisions(ctx, stage.name, output.decisions)
    ctx.upstream[stage.name] = decisions_path
    outputs = {role: str(path) for role, path in output.outputs.items()}
    write_state(ctx.states, StageState(stage.name, DONE, current, output.summary, output.counts, outputs))
    console.step(f"{stage.name}: done: {output.summary}")
    return DONE


@dataclass(frozen=True)
class PipelineResult:
    finished: bool
    waiting_stage: str | None  # the stage that waits (or failed)
    message: str
    release_dir: Path | None
    samples: int = 0
    test_samples: int = 0
    failed: bool = False


@flow(name="kobbq-pipeline", log_prints=False)
def run_pipeline(pipeline: Pipeline, out: Path = Path("build"), force: bool = False) -> PipelineResult:
    from flows.build import build_release

    console.step("pipeline flow started (Prefect API ready)")
    profile = load_profile(pipeline.config.profile)
    name = pipeline.config.name or profile.release.name
    ctx = Context(pipeline, profile, Path(out), name)
    for stage in PEOPLE_STAGES:
        status = run_stage(ctx, stage)
        if status != DONE:
            state = read_state(ctx.states, stage.name)
            return PipelineResult(False, stage.name, state.message if state else "", None, failed=status == FAILED)
    files = survey_inputs(ctx)
    machine = read_state(ctx.states, "pretranslate").outputs.get("mt_templates")
    parallel = {"mtBBQ": Path(machine)} if machine else {}
    stage_reports = stage_report_files(ctx)
    result = build_release(profile_name=pipeline.config.profile, templates=templates_file(ctx), out=Path(out),
                           name=name, seed=pipeline.config.seed, corrections=ctx.corrections,
                           survey=files if files.results else None, upstream=dict(ctx.upstream),
                           parallel=parallel, reports=stage_reports, force=force)
    summary = f"{result.samples:,} samples, {result.test_samples:,} in the test split"
    write_state(ctx.states, StageState("release", DONE, release_fingerprint(ctx), summary, {"samples": result.samples,
                                                                      "test_samples": result.test_samples},
                                       {"release": str(result.release_dir)}))
    return PipelineResult(True, None, summary, result.release_dir, result.samples, result.test_samples)


def stage_report_files(ctx: Context) -> dict[str, Path]:
    """Reports the stages wrote this time (recorded in their state), to be copied into the release."""
    reports = {}
    for stage in PEOPLE_STAGES:
        state = read_state(ctx.states, stage.name)
        for role, path in (state.outputs.items() if state else ()):
            if role.startswith("report:") and Path(path).exists():
                reports[role.removeprefix("report:")] = Path(path)
    return reports


def release_fingerprint(ctx: Context) -> str:
    """What the release is built from: the template file, the survey inputs, every stage's decisions."""
    files = {"templates": templates_file(ctx), **survey_inputs(ctx).files(),
             **{f"decisions_{name}": path for name, path in ctx.upstream.items()}}
    return files_fingerprint(files, extra=kobbq.__version__)


def current_fingerprints(pipeline: Pipeline, out: Path) -> dict[str, str | None]:
    """Each stage's fingerprint now, for ``kobbq status`` (inputs not there yet count as missing)."""
    profile = load_profile(pipeline.config.profile)
    ctx = Context(pipeline, profile, Path(out), pipeline.config.name or profile.release.name)
    prints: dict[str, str | None] = {}
    for stage in PEOPLE_STAGES:
        prints[stage.name] = stage_fingerprint(ctx, stage)
        decisions = ctx.work / stage.name / "decisions.csv"
        if decisions.exists():
            ctx.upstream[stage.name] = decisions
    prints["release"] = release_fingerprint(ctx)
    return prints
