"""Loading and checking a template file in the profile's format (``tasks.templates.formats``): the one way in.

Errors make ``kobbq validate`` exit 1 and stop a build, every one of them listed with its file, row and column.
The KoBBQ format's checks are ``tasks.templates.validate_kobbq`` (``validate_loaded``, also imported from here by
the command line), the workbook format's ``tasks.templates.validate_workbook``.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import UserError
from core.findings import Finding, raise_if_errors
from core.profile import Profile
from tasks.templates.corrections import Correction, load_corrections
from tasks.templates.formats import template_format
from tasks.templates.load import LoadedTemplates
from tasks.templates.validate_kobbq import validate_loaded

__all__ = ["load_checked", "load_templates", "validate_loaded"]

MAX_LISTED_ERRORS = 30


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
