"""The pretranslate stage: DeepL drafts of the ST/TM templates, the translator's workbooks, and the machine-translated
twin's templates. Without ``DEEPL_AUTH_KEY`` it replays the recorded cache and waits when a segment is missing from it;
in real-data mode the released file is the post-edit and nothing is translated. ``kobbq translate`` and ``kobbq postedit
export`` run it alone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from core.atomic import write_with
from core.errors import UserError
from core.profile import Profile
from core.stage_contract import Context, StageOutput, Waiting, require
from tasks.templates.bbq import BBQTemplate, load_bbq_templates
from tasks.translation.cache import check_readable
from tasks.translation.deepl_client import KEY_VARIABLE, TranslationStopped, set_network_retries, translator_for
from tasks.translation.glossary import EMPTY_GLOSSARY, Glossary, load_glossary
from tasks.translation.twin_templates import MT_TEMPLATES, write_machine_translation
from tasks.translation.pretranslate import load_labels, pretranslate, require_target_language, translatable
from tasks.translation.workbook import export_postedit_workbooks

NAME = "pretranslate"
CACHE_FILE = "translation_cache.sqlite"


def translatable_templates(bbq_path: Path, labels_path: Path, profile: Profile
                           ) -> tuple[list[BBQTemplate], dict[str, str]]:
    """The BBQ rows labelled with one of the profile's translated labels, and every label."""
    bbq, _ = load_bbq_templates(bbq_path)
    labels = load_labels(labels_path)
    return translatable(bbq, labels, profile), labels


def check_target_language(profile: Profile) -> None:
    """Before a live run starts anything: one clear error when DeepL does not translate into the profile's language
    (Catalan). Without a key in the environment there is nothing to ask; the run checks again."""
    if key := os.environ.get(KEY_VARIABLE):
        try:
            require_target_language(translator_for(key), profile.translation.target_lang(profile.language), profile)
        except TranslationStopped:
            pass  # DeepL did not answer; the run itself stops cleanly and keeps what it has


def glossary_of(ctx: Context) -> Glossary:
    path = ctx.glossary
    return load_glossary(path) if path.exists() else EMPTY_GLOSSARY


def translation_cache(ctx: Context) -> Path:
    """Where the DeepL drafts are cached: a pipeline's is shared by every pipeline of this release (never paid twice),
    first copied from the recorded cache it names; a one-off command's is ``--cache``, else its folder's."""
    given = ctx.file(ctx.pipeline.config.translation.cache)
    if ctx.one_off is not None:
        return given or ctx.one_off / CACHE_FILE
    cache = ctx.folder.work / CACHE_FILE
    earlier = ctx.folder.work / NAME / CACHE_FILE  # where a build before per-pipeline work folders kept it
    if not cache.exists() and earlier.exists():
        earlier.replace(cache)
    if not cache.exists() and given is not None and given.exists():
        write_with(cache, lambda copy: shutil.copyfile(given, copy))  # a full disk leaves no half a cache
    return cache


def prepare(ctx: Context) -> None:
    """Before the flow run: the cache the stage will read first opens (its own copy once made, else the recorded cache
    the pipeline names, which a garbage file would otherwise reach only as the copy, after Prefect's start-up)."""
    if ctx.pipeline.reference_mode:
        return
    given = ctx.file(ctx.pipeline.config.translation.cache)
    own = (given or ctx.one_off / CACHE_FILE) if ctx.one_off is not None else ctx.folder.work / CACHE_FILE
    first = own if own.exists() else given
    if first is not None and first.exists():
        check_readable(first)


def run(ctx: Context) -> StageOutput:
    if ctx.pipeline.reference_mode:
        return StageOutput({"segments": 0}, {}, [], "reference mode: the released file is the post-edit; no DeepL")
    folder = ctx.stage_dir(NAME)
    cache = translation_cache(ctx)
    bbq_path = ctx.file(ctx.pipeline.config.labels.bbq)
    labels_path = require(ctx.output("labels", "labels"), "the final labels", "Run the labels stage.")
    assert bbq_path is not None
    templates, labels = translatable_templates(bbq_path, labels_path, ctx.profile)
    if not templates:
        raise UserError(f"no BBQ template is labelled {' or '.join(ctx.profile.translation.labels)} in the labels "
                        "file", labels_path)
    key = None if ctx.offline else os.environ.get(KEY_VARIABLE)
    if key:
        set_network_retries(ctx.profile.translation.max_network_retries)
    sent = ctx.stage_dir(NAME, "postedit_out")
    result = pretranslate(templates, translator_for(key), cache, ctx.profile, glossary_of(ctx))
    if not result.complete and key:  # DeepL was asked, and stopped (quota, key, network): its message says why
        raise Waiting(f"DeepL stopped: {result.stopped}",
                      "Re-run once DeepL answers again; what it translated is kept.", what="DeepL")
    if not result.complete:
        raise Waiting(f"DeepL drafts: {result.segments_left} of {result.segments} segment(s) are not in the "
                      f"translation cache {cache}, and {KEY_VARIABLE} is not set",
                      f"Set it and re-run (`kobbq translate --profile {ctx.profile.argument} --dry-run --bbq "
                      f"{bbq_path} --labels {labels_path} --cache {cache}` prints the cost first).", what="DeepL")
    workbooks = export_postedit_workbooks(result.drafts, sent, ctx.profile, labels)
    # A workbook format's twin would need the culture's vocabulary beside it, which translation does not make: for
    # such a profile the twin is not written (the machine translation stays in the drafts).
    machine = (write_machine_translation(result.drafts, ctx.profile, labels, folder / MT_TEMPLATES)
               if ctx.profile.templates.workbook is None else None)
    counts = {"rows": len(templates), "segments": result.segments, "chars_billed": result.chars_billed,
              "chars_from_cache": result.chars_from_cache, "workbooks": len(workbooks),
              "placeholder_errors": sum(1 for f in result.flagged if f.severity == "error"),
              "mt_rows": len(machine.rows) if machine and machine.tsv_path else 0}
    outputs: dict[str, Path] = {"workbooks": sent}
    if machine and machine.tsv_path:
        outputs["mt_templates"] = machine.tsv_path
    return StageOutput(counts, outputs, result.decisions + (machine.decisions if machine else []),
                       f"{len(templates)} BBQ rows drafted; {len(workbooks)} post-edit workbook(s) to send out")
