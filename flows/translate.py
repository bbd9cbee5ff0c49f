"""The translation stage as Prefect flows: pre-translate and export, import post-edits, link the reference.

- ``translate_flow``: BBQ templates (ST/TM by their labels) -> DeepL drafts (SQLite cache in
  the output folder; never pays twice; resumes) -> one post-edit workbook per category and
  the machine-translated twin ``mtBBQ_templates.tsv`` (only once every segment is drafted).
- ``postedit_import_flow``: returned workbooks -> ``postedit_templates.tsv`` (KoBBQ format),
  ``postedit_report.md`` (edit rates, substitutions).
- ``postedit_reference_flow``: a released KoBBQ template file taken as the post-edit, linked
  to BBQ through ``BBQ_category``/``BBQ_id`` (no DeepL).

Each writes ``decisions_translation.csv`` or ``decisions_postedit.csv`` into its output folder.
Tasks are not cached by Prefect: the SQLite translation cache is the persistent cache,
keyed on exactly what DeepL receives, and the other steps take well under a second.

The work is the pipeline stages' own (``tasks/translation/pretranslate_stage.py``,
``postedit_stage.py``): these flows wrap the same functions, so ``kobbq translate`` and
``kobbq build --pipeline`` cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from core import interrupt
from core.errors import UserError
from core.profile import DEFAULT_PROFILE, Profile, load_profile
from core.atomic import write_with
from tasks.templates.bbq import BBQTemplate
from tasks.templates.corrections import load_corrections
from core.decisions import Decision, write_decisions_csv
from core.findings import Finding
from tasks.templates.validate import load_templates
from tasks.translation.deepl_client import KEY_VARIABLE, Translator, set_network_retries
from tasks.translation.glossary import Glossary, load_glossary, profile_glossary
from tasks.translation.postedit import ImportResult
from tasks.translation.postedit_stage import import_returned, link_released
from tasks.translation.pretranslate_stage import (CACHE_FILE, MT_TEMPLATES, Drafted, draft_and_export,
                                                  translatable_templates, translator_for)
from tasks.translation.reference import ReferenceLinks


@dataclass(frozen=True)
class TranslateResult:
    rows: int
    segments: int
    segments_left: int
    chars_billed: int
    chars_from_cache: int
    flagged: int  # findings of severity error (lost placeholders)
    stopped: str | None
    workbooks: list[Path]
    mt_templates: Path | None
    decisions_path: Path
    decisions: list[Decision] = field(default_factory=list)


@dataclass(frozen=True)
class PosteditResult:
    rows: int
    errors: int
    warnings: int
    templates_path: Path | None
    report_path: Path | None
    decisions_path: Path
    decisions: list[Decision] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def write_decisions(decisions: list[Decision], path: Path) -> Path:
    return write_with(path, lambda temporary: write_decisions_csv(decisions, temporary))


def resolve_glossary(profile: Profile, glossary_path: Path | None) -> Glossary:
    return load_glossary(glossary_path) if glossary_path else profile_glossary(profile)


def auth_key(profile: Profile) -> str:
    """``DEEPL_AUTH_KEY``, else the profile's Prefect Secret block; the key itself is never printed."""
    key = os.environ.get(KEY_VARIABLE, "")
    if key:
        return key
    from prefect.blocks.system import Secret

    try:
        return str(Secret.load(profile.translation.secret_block).get())
    except Exception:  # no such block, or no Prefect API: say what to set, nothing else
        raise UserError(f"no DeepL key: set {KEY_VARIABLE} or create the Prefect Secret block "
                        f"{profile.translation.secret_block!r} (or use --dry-run / --replay)") from None


@task(name="load-bbq-templates", cache_policy=NO_CACHE)
def load_translatable(bbq_path: Path, labels_path: Path, profile: Profile
                      ) -> tuple[list[BBQTemplate], dict[str, str]]:
    chosen, labels = translatable_templates(bbq_path, labels_path, profile)
    if not chosen:
        raise UserError(f"no BBQ template is labelled {' or '.join(profile.translation.labels)} in the labels file",
                        str(labels_path))
    return chosen, labels


@task(name="deepl-pretranslate-and-export", cache_policy=NO_CACHE)
def pretranslate_task(templates: list[BBQTemplate], labels: dict[str, str], translator: Translator, cache_path: Path,
                      profile: Profile, glossary: Glossary, out: Path) -> Drafted:
    return draft_and_export(templates, labels, translator, cache_path, profile, glossary, out, out / MT_TEMPLATES)


@flow(name="kobbq-translate", log_prints=False)
def translate_flow(bbq_path: Path, labels_path: Path, out: Path, profile_name: str = DEFAULT_PROFILE,
                   replay: bool = False, glossary_path: Path | None = None,
                   cache_path: Path | None = None) -> TranslateResult:
    """Pre-translate the ST/TM templates; export the workbooks and mtBBQ once everything is drafted."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    glossary = resolve_glossary(profile, glossary_path)
    templates, labels = load_translatable(Path(bbq_path), Path(labels_path), profile)
    if not replay:
        set_network_retries(profile.translation.max_network_retries)
    translator = translator_for(None if replay else auth_key(profile))
    drafted = pretranslate_task(templates, labels, translator, Path(cache_path or out / CACHE_FILE), profile, glossary,
                                out)
    result, machine = drafted.result, drafted.machine
    decisions = result.decisions + (machine.decisions if machine else [])
    path = write_decisions(decisions, out / "decisions_translation.csv")
    return TranslateResult(len(templates), result.segments, result.segments_left, result.chars_billed,
                           result.chars_from_cache, sum(1 for f in result.flagged if f.severity == "error"),
                           result.stopped, drafted.workbooks, machine.tsv_path if machine else None, path, decisions)


@task(name="import-postedit-workbooks", cache_policy=NO_CACHE)
def import_task(workbooks: list[Path], profile: Profile, out: Path, glossary: Glossary
                ) -> tuple[ImportResult, Path | None]:
    return import_returned(workbooks, profile, out, glossary)


@flow(name="kobbq-postedit-import", log_prints=False)
def postedit_import_flow(workbooks: list[Path], out: Path, profile_name: str = DEFAULT_PROFILE,
                         glossary_path: Path | None = None) -> PosteditResult:
    """Returned workbooks -> the profile's template format, post-edit report and decisions (nothing on errors)."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result, report = import_task([Path(w) for w in workbooks], profile, out, resolve_glossary(profile, glossary_path))
    path = write_decisions(result.decisions, out / "decisions_postedit.csv")
    errors = len(result.errors)
    return PosteditResult(len(result.rows), errors, len(result.findings) - errors, result.tsv_path, report, path,
                          result.decisions, result.findings)


@flow(name="kobbq-postedit-reference", log_prints=False)
def postedit_reference_flow(templates_path: Path, bbq_path: Path, out: Path, profile_name: str = DEFAULT_PROFILE,
                            corrections_path: Path | None = None) -> ReferenceLinks:
    """A released template file (or workbook folder) as the post-edit: link rows to BBQ, record the decisions."""
    interrupt.take_over()
    profile = load_profile(profile_name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    loaded = load_templates(Path(templates_path), profile,
                            load_corrections(corrections_path) if corrections_path else [])
    result = link_released(loaded.templates, Path(bbq_path), profile)
    write_decisions(result.decisions, out / "decisions_postedit.csv")
    return result
