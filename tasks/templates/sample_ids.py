"""KoBBQ's sample IDs, ``<category>-<number><version>-<fill>-amb|dis-bsd|cnt`` (``age-001a-002-amb-bsd``): one place
for the format that the expansion writes, a listed test split names and the evaluation reads back."""

from __future__ import annotations

from core.profile import Profile
from tasks.templates.load import TemplateRow

# Template numbers and fills have at least three digits (``{:03d}``), more past 999.
_ROW = r"^(?P<row>(?P<prefix>[a-z_]+)-(?P<number>[0-9]{3,})(?P<version>[a-z]+))"
_QUESTION = r"-(?P<context>amb|dis)-(?P<question>bsd|cnt)$"
SAMPLE_ID = _ROW + r"-(?P<fill>[0-9]{3,})" + _QUESTION
# A listed ID with an unpadded fill (``-1-``) is still parsed, so that its message names the row's fills.
ANY_FILL_SAMPLE_ID = _ROW + r"-(?P<fill>[0-9]+)" + _QUESTION
QUESTION_SUFFIXES = ("amb-bsd", "amb-cnt", "dis-bsd", "dis-cnt")  # a fill's four samples, in release order


def fill_number(fill: int) -> str:
    """A fill as sample IDs write it: 1 -> ``001`` (more digits past 999)."""
    return f"{fill:03d}"


def row_prefix(template: TemplateRow, profile: Profile) -> str:
    """What every sample ID of a template row starts with: ``age-001a``."""
    category = profile.category(template.category)
    return f"{category.sample_prefix if category else template.category.lower()}-{template.template_id:03d}" \
           f"{template.version}"
