"""The template formats, in one registry: a new format is one entry here (and the modules it names).

A format is how a culture writes its templates and how their rows become samples:

- ``load``: its reader (the KoBBQ TSV: ``load.load_kobbq_templates``; the EsBBQ workbooks, a folder of sheets with
  a vocabulary: ``workbook.load_workbook_templates``), corrections applied, problems returned as findings;
- ``check``: its checks (``validate_kobbq.validate_loaded``, ``validate_workbook.validate_workbook``), every
  problem at its file, row and column;
- ``expand``: its adapter to the one expansion engine (``engine``): ``kobbq_format`` (rows as written, inline
  slot lists, four samples a fill) or ``workbook_format`` (generated flips, candidate pools, the profile's hooks);
- ``generated``: a generated release is expanded whole when it is planned, written in the culture's own layout
  and has no test split (it is evaluated whole); the others are streamed chunk by chunk and get a test split.

A profile's format is ``workbook`` when it has a ``[templates.workbook]`` section, else ``kobbq``
(``format_name``). ``tasks.templates.validate`` loads and checks through this registry; the release
(``tasks.release.assemble``) and the audit's diff expand through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.findings import Finding
from core.profile import Profile
from core.text import allowed_characters
from tasks.templates.corrections import Correction
from tasks.templates.engine import Expansion
from tasks.templates.kobbq_format import expand_templates
from tasks.templates.load import LoadedTemplates, TemplateRow, load_kobbq_templates
from tasks.templates.validate_kobbq import validate_loaded
from tasks.templates.validate_workbook import validate_workbook
from tasks.templates.workbook import Vocabulary, load_workbook_templates
from tasks.templates.workbook_format import expand_workbook

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
