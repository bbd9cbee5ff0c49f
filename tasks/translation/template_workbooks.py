"""The post-edit of a workbook-format culture (EsBBQ) written back as the template workbooks a build reads.

One ``<Category>.xlsx`` per category, in the format's own columns: the IDs and links
(``esbbq_template_id``, ``bbq_template_id``, ...), every translated field and language-specific
cell under its language's suffix (``ambiguous_context_es``, ``names_es``, ``stereotyped_groups_es``),
the other cells the translator filled (``stated_gender_info``, ``proper_nouns_only``) shared. The
vocabulary workbooks, which translation does not make, are copied from the folder given (beside
the returned workbooks). The folder is checked with the project's workbook validation
(``kobbq validate --profile es``) before it is published, each problem moved to the post-edit cell
its text came from; with any error nothing is written.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

from core.errors import Location, UserError
from core.findings import Finding
from core.profile import Profile, WorkbookFormat
from core.text import allowed_characters
from core.workbooks import save_workbook, set_text
from tasks.templates.validate_workbook import validate_workbook
from tasks.templates.workbook import load_workbook_templates
from tasks.translation.workbook import EditedCell, clean_text

SHEET = "Sheet1"  # as the EsBBQ templates name their sheet; the loader reads the first sheet


def _format(profile: Profile) -> WorkbookFormat:
    fmt = profile.templates.workbook
    if fmt is None:
        raise UserError(f"profile {profile.name!r} has no [templates.workbook] section; its post-edit is a TSV")
    return fmt


def sheet_columns(profile: Profile) -> dict[str, str]:
    """Language-selected column -> the sheet's column, in sheet order: IDs and links, then the translated
    fields and the translator's cells, language-specific ones with the language's suffix."""
    fmt = _format(profile)
    suffix = f"_{profile.language}"
    fixed = [fmt.label_column, fmt.bbq_id_column, fmt.id_column, "version", fmt.bbq_category_column,
             fmt.category_column]
    columns = {name: name for name in fixed}
    columns.update({name: name + suffix for name in profile.translation.fields.values()})
    columns.update({c.name: c.name + (suffix if c.per_language else "") for c in profile.translation.row_cells})
    return columns


def workbook_rows(cells: list[EditedCell], profile: Profile, use_draft: bool = False
                  ) -> tuple[list[dict[str, str]], dict[tuple[str, str], Location], list[Finding]]:
    """Template rows (language-selected column -> text) from returned cells, in export order.

    Returns the rows, where each (row key, column) came from, and the findings so far.
    """
    fmt = _format(profile)
    spelled = {bbq: own for own, bbq in fmt.bbq_category_names.items()}  # Gender_identity -> GenderIdentity
    expected = [*profile.translation.fields.values(), *(c.name for c in profile.translation.row_cells)]
    grouped: dict[tuple[str, int, str], dict[str, EditedCell]] = defaultdict(dict)
    for cell in cells:
        grouped[(cell.category, cell.row.template_id, cell.row.version)][cell.row.field] = cell
    rows, origin, findings, allowed = [], {}, [], allowed_characters(profile)
    for (category, template_id, version), by_field in grouped.items():
        first = next(iter(by_field.values()))
        key = f"{category}|{template_id}|{version}"
        missing = [f for f in expected if f not in by_field]
        if missing:
            raise UserError(f"template row {key} lacks field(s) {', '.join(missing)}", first.where)
        origin[(key, "")] = first.where
        row = {fmt.label_column: first.row.label, fmt.bbq_id_column: first.row.bbq_id, fmt.id_column: str(template_id),
               "version": version, fmt.bbq_category_column: spelled.get(first.row.bbq_category, first.row.bbq_category),
               fmt.category_column: category}
        for column in expected:
            cell = by_field[column]
            origin[(key, column)] = cell.where
            row[column] = clean_text(cell.row.draft if use_draft else cell.postedit, cell.where, findings, allowed)
        rows.append(row)
    return rows, origin, findings


def write_category_workbooks(rows: list[dict[str, str]], folder: Path, profile: Profile
                             ) -> dict[tuple[str, int], str]:
    """One ``<Category>.xlsx`` per category in ``folder``; returns (file name, sheet row) -> row key."""
    from openpyxl import Workbook  # ~0.3 s: only when workbooks are written

    fmt = _format(profile)
    columns = sheet_columns(profile)
    by_category: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_category[row[fmt.category_column]].append(row)
    keys: dict[tuple[str, int], str] = {}
    for category in profile.category_names:
        if not by_category.get(category):
            continue
        workbook = Workbook()
        sheet = workbook.active
        sheet.title = SHEET
        sheet.append(list(columns.values()))
        for number, row in enumerate(by_category[category], start=2):
            for index, column in enumerate(columns, start=1):
                value = row.get(column, "")
                set_text(sheet.cell(number, index), int(value) if column == fmt.id_column else value)
            keys[(f"{category}.xlsx", number)] = f"{category}|{row[fmt.id_column]}|{row['version']}"
        save_workbook(workbook, folder / f"{category}.xlsx")
    return keys


def copy_vocabulary(vocabulary: Path, folder: Path, fmt: WorkbookFormat) -> None:
    """The vocabulary and proper-name workbooks, which the generator needs beside the templates."""
    for name in (fmt.vocabulary, fmt.proper_names):
        source = Path(vocabulary) / name
        if not source.exists():
            raise UserError(f"{name} is missing: the template workbooks need the culture's vocabulary beside them; "
                            "put vocabulary.xlsx and vocabulary_proper_names.xlsx beside the returned workbooks",
                            source)
        shutil.copyfile(source, folder / name)


def write_checked_workbooks(rows: list[dict[str, str]], origin: dict[tuple[str, str], Location], out_dir: Path,
                            profile: Profile, vocabulary: Path) -> list[Finding]:
    """Write the workbooks into a staging folder, validate them as the build will, and publish the folder
    (replacing ``out_dir``) only when there is no error. Findings name the post-edit cells."""
    fmt = _format(profile)
    out_dir = Path(out_dir)
    staging = out_dir.with_name(f".{out_dir.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        copy_vocabulary(vocabulary, staging, fmt)
        keys = write_category_workbooks(rows, staging, profile)
        fields = {sheet: name for name, sheet in sheet_columns(profile).items()}
        findings = []
        for finding in validate_workbook(load_workbook_templates(staging, profile), profile):
            key = keys.get((Path(finding.where.file).name, finding.where.row or 0), "")
            where = origin.get((key, fields.get(finding.where.column or "", "")), origin.get((key, "")))
            findings.append(Finding(finding.severity, where or finding.where, finding.code,
                                    f"{key}: {finding.message}" if key else finding.message))
        if not any(f.severity == "error" for f in findings):
            _publish(staging, out_dir)
        return findings
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by ``staging`` with two renames: a reader sees the old folder or the new one."""
    retired = out_dir.with_name(f".{out_dir.name}.retired")
    shutil.rmtree(retired, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(retired)
    staging.rename(out_dir)
    shutil.rmtree(retired, ignore_errors=True)
