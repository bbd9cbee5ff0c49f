"""The English BBQ templates (nyu-mll/BBQ ``new_templates - <Category>.csv``): model and loader.

BBQ's files differ per category (columns, category spelling, placeholder typos such as ``{{{NAME2}}``): the loader
takes the category from the file name, keeps every column, and reports oddities as findings rather than failing."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_records
from core.findings import Finding

FILE_PREFIX = "new_templates - "
# Intersectional and filler files have no counterpart in KoBBQ's categorization.
NOT_TEMPLATES = ("Filler_items", "Race_x_SES", "Race_x_gender")

# Model field -> BBQ column: the text that translation and labelling work on.
TEXT_COLUMNS = {
    "ambiguous_context": "Ambiguous_Context",
    "disambiguating_context": "Disambiguating_Context",
    "negative_question": "Question_negative_stereotype",
    "non_negative_question": "Question_non_negative",
    "negative_answer": "Answer_negative",
    "non_negative_answer": "Answer_non_negative",
}
REQUIRED_COLUMNS = ["Q_id", "Category", *TEXT_COLUMNS.values()]
PLACEHOLDER = re.compile(r"\{\{([A-Z]+[0-9]*)\}\}")
ANY_BRACES = re.compile(r"\{+[^{}]*\}+")


@dataclass(frozen=True)
class BBQTemplate:
    source: str
    row: int  # line in the file, header = 1
    category: str  # from the file name, e.g. "Race_ethnicity"
    q_id: str
    version: str  # "" where the file has no version column or leaves it empty
    texts: dict[str, str]
    names: str  # the raw Names cell ("" where the file has none: fillers come from the vocabulary)
    lexical: str  # the raw Lexical_diversity cell
    relevant_social_values: str
    known_stereotyped_groups: str
    columns: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def subject(self) -> str:
        """The decision-log subject of the template this row belongs to."""
        return f"bbq:{self.category}:{self.q_id}"

    @property
    def key(self) -> str:
        return f"{self.category}|{self.q_id}|{self.version}"

    def where(self, column: str | None = None) -> Location:
        return Location(self.source, self.row, column)

    @property
    def placeholders(self) -> set[str]:
        return {m for text in self.texts.values() for m in PLACEHOLDER.findall(text)}


def category_of(path: Path) -> str:
    """``new_templates - Race_ethnicity.csv`` -> ``Race_ethnicity``."""
    return path.stem.removeprefix(FILE_PREFIX)


def template_files(path: Path, categories: list[str] | None = None) -> list[Path]:
    """The template CSVs of a BBQ folder (or the one file given), optionally limited to some categories."""
    if not path.exists():
        raise UserError("BBQ template path does not exist", path)
    if path.is_file():
        return [path]
    files = [p for p in sorted(path.glob(f"{FILE_PREFIX}*.csv"))
             if category_of(p) not in NOT_TEMPLATES and (categories is None or category_of(p) in categories)]
    if not files:
        raise UserError(f"no BBQ template files ('{FILE_PREFIX}<Category>.csv') found", path)
    return files


def read_bbq_file(path: Path) -> tuple[list[BBQTemplate], list[Finding]]:
    header, records = read_records(path)
    if missing := [c for c in REQUIRED_COLUMNS if c not in header]:
        raise UserError(f"missing column(s) {', '.join(missing)}; found {', '.join(header)}", path)
    category = category_of(path)
    templates, findings = [], []
    for line, row in records:
        cells = {k: v.strip() for k, v in row.items()}
        template = BBQTemplate(
            source=path.name, row=line, category=category, q_id=cells["Q_id"], version=cells.get("version", ""),
            texts={field_: cells[column] for field_, column in TEXT_COLUMNS.items()}, names=cells.get("Names", ""),
            lexical=cells.get("Lexical_diversity", ""), relevant_social_values=cells.get("Relevant_social_values", ""),
            known_stereotyped_groups=cells.get("Known_stereotyped_groups", ""), columns=cells)
        findings.extend(row_findings(template))
        templates.append(template)
    findings.extend(duplicate_findings(templates))
    return templates, findings


def row_findings(template: BBQTemplate) -> list[Finding]:
    findings = []
    if not template.q_id:
        findings.append(Finding("error", template.where("Q_id"), "empty-item", "Q_id is empty"))
    for field_, column in TEXT_COLUMNS.items():
        text = template.texts[field_]
        if not text:
            findings.append(Finding("error", template.where(column), "empty-item", f"{column} is empty"))
        for token in ANY_BRACES.findall(text):
            if not PLACEHOLDER.fullmatch(token):
                findings.append(Finding("warning", template.where(column), "placeholder-malformed",
                                        f"malformed placeholder {token!r} (expected {{{{NAME1}}}} style)"))
    return findings


def duplicate_findings(templates: list[BBQTemplate]) -> list[Finding]:
    counts = Counter(t.key for t in templates)
    return [Finding("warning", t.where("Q_id"), "duplicate",
                    f"Q_id {t.q_id} version {t.version or '(none)'} appears {counts[t.key]} times in the file")
            for t in templates if counts[t.key] > 1]


def load_bbq_templates(path: Path, categories: list[str] | None = None) -> tuple[list[BBQTemplate], list[Finding]]:
    """Every template row of a BBQ folder (or one file), with the findings of every file."""
    templates, findings = [], []
    for file in template_files(Path(path), categories):
        file_templates, file_findings = read_bbq_file(file)
        templates.extend(file_templates)
        findings.extend(file_findings)
    return templates, findings
