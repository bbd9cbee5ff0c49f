"""The template formats, in one registry, and the one way in: a template file loaded and checked in its profile's
format, every error listed with its file, row and column (``kobbq validate`` exits 1, a build stops).

A format is how a culture writes its templates and how their rows become samples: its reader (corrections
applied, problems returned as findings), its checks, its adapter to the one expansion engine (``engine``), and
whether a release of it is ``generated``: expanded whole when it is planned, written in the culture's own layout
and without a test split (it is evaluated whole); the others are streamed chunk by chunk and get a test split.
A new format is one entry in ``TEMPLATE_FORMATS`` (and the modules it names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.findings import Finding, raise_if_errors
from core.profile import Profile
from core.text import allowed_characters
from tasks.templates.corrections import Correction, load_corrections
from tasks.templates.engine import Expansion
from tasks.templates.kobbq_format import expand_templates
from tasks.templates.load import LoadedTemplates, TemplateRow, load_kobbq_templates
from tasks.templates.validate_kobbq import validate_loaded
from tasks.templates.validate_workbook import validate_workbook
from tasks.templates.workbook import Vocabulary, load_workbook_templates
from tasks.templates.workbook_format import expand_workbook

__all__ = ["load_checked", "load_templates", "template_format", "validate_loaded"]

MAX_LISTED_ERRORS = 30
Load = Callable[[Path, Profile, list[Correction]], LoadedTemplates]
Check = Callable[[LoadedTemplates, Profile], list[Finding]]
Expand = Callable[[list[TemplateRow], Profile, Vocabulary | None], Expansion]


@dataclass(frozen=True)
class TemplateFormat:
    name: str
    description: str
    load: Load
    check: Check
    expand: Expand
    generated: bool


def _load_kobbq(path: Path, profile: Profile, corrections: list[Correction]) -> LoadedTemplates:
    return load_kobbq_templates(path, corrections, profile.templates.separators, allowed_characters(profile))


TEMPLATE_FORMATS = {fmt.name: fmt for fmt in (
    TemplateFormat("kobbq", "KoBBQ's template file: one TSV, a row per version, inline slot lists",
                   _load_kobbq, validate_loaded, lambda templates, profile, _: expand_templates(templates, profile),
                   generated=False),
    TemplateFormat("workbook", "EsBBQ's workbooks: a sheet per category with placeholders, and a vocabulary",
                   load_workbook_templates, validate_workbook, expand_workbook, generated=True),
)}


def format_name(profile: Profile) -> str:
    """The profile's template format: ``workbook`` when it describes its workbooks, else ``kobbq``."""
    return "workbook" if profile.templates.workbook is not None else "kobbq"


def template_format(profile: Profile) -> TemplateFormat:
    return TEMPLATE_FORMATS[format_name(profile)]


def load_templates(path: Path, profile: Profile, corrections: list[Correction] | None = None) -> LoadedTemplates:
    """The one template loader: the profile's format (a KoBBQ TSV, or a folder of workbooks), corrections applied."""
    return template_format(profile).load(path, profile, corrections or [])


def load_checked(path: Path, corrections_path: Path | None, profile: Profile) -> tuple[LoadedTemplates, list[Finding]]:
    """Load and validate a template file; any error stops the build with every error listed."""
    corrections = load_corrections(corrections_path) if corrections_path else []
    loaded = load_templates(path, profile, corrections)
    return loaded, check_loaded(loaded, path, profile)


def check_loaded(loaded: LoadedTemplates, path: Path, profile: Profile) -> list[Finding]:
    """The checks of ``load_checked`` on a template file already loaded; its findings (warnings) when none is an
    error."""
    findings = template_format(profile).check(loaded, profile)
    if not loaded.templates and not loaded.findings:
        raise UserError("has a header but no template rows; nothing to build", path)
    raise_if_errors("the template file", findings, "nothing was built", MAX_LISTED_ERRORS,
                    f" (run `kobbq validate --profile {profile.argument} {path}` for all)")
    return findings
