"""The templates stage: the post-edited rows, their groups and the newly-created templates (``docs/new-culture.md``
0.6, 0.7) as one file, checked like any template file and first against the version convention at the groups-file
lines. A workbook profile (EsBBQ) keeps groups and new templates in its workbooks: its folder passes on as checked."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from core import console
from core.console import counts_text
from core.decisions import Decision, template_subject
from core.errors import Location, UserError
from core.findings import Finding, raise_if_errors
from core.profile import Profile
from core.stage_contract import Context, StageOutput, require
from core.tables import read_csv_table, write_tsv_rows
from core.text import allowed_characters, check_text, normalise_text
from tasks.templates.corrections import Correction
from tasks.templates.load import LoadedTemplates, NC, TemplateRow, load_kobbq_templates, read_tsv, rows_by_template
from tasks.templates.stage_templates import checked_templates, corrections, loaded_templates
from tasks.templates.validate import validate_loaded
from tasks.templates.versions import version_decisions, version_findings

NAME = "templates"
GROUP_COLUMNS = ["N1_info", "N2_info", "Target_group", "Reference"]


LABELS_STAGE = "labels"  # the stage its decisions carry: NC is a label, decided beside the labelling's ST/TM/SR


@dataclass(frozen=True)
class NewlyCreated:
    loaded: LoadedTemplates
    findings: list[Finding]  # warnings only: any error stops the import
    decisions: list[Decision]

    @property
    def templates(self) -> list[TemplateRow]:
        return self.loaded.templates


def nc_findings(templates: list[TemplateRow]) -> list[Finding]:
    """Rows of an NC file that are not NC templates: another label, or a link to a BBQ source (a linked one is an
    adapted template in the wrong file)."""
    findings = []
    for row in templates:
        if row.label != NC:
            findings.append(Finding("error", row.where("Label_annotation"), "not-nc",
                                    f"label {row.label!r}: a newly-created template is labelled {NC}; adapted "
                                    "(ST/TM) templates come from the post-edited translation, not from this file"))
        if row.bbq_id or row.bbq_category:
            findings.append(Finding("error", row.where("BBQ_id"), "nc-with-link",
                                    f"links to BBQ {row.bbq_category} {row.bbq_id}; a newly-created template has "
                                    "no BBQ source (leave BBQ_id and BBQ_category empty or N/A)"))
    return findings


def clash_findings(templates: list[TemplateRow], others: list[TemplateRow]) -> list[Finding]:
    """NC template IDs already used by the adapted templates they will be merged with."""
    taken = {row.template_key: row for row in others}
    return [Finding("error", rows[0].where("ID"), "id-clash",
                    f"{key[0]} template {key[1]} already exists in {Path(taken[key].source).name} "
                    f"(row {taken[key].row}); give the new template an unused ID")
            for key, rows in rows_by_template(templates).items() if key in taken]


def nc_decisions(templates: list[TemplateRow], profile: Profile) -> list[Decision]:
    return [Decision(
        stage=LABELS_STAGE, subject_type="template", subject=template_subject(category, template_id), rule="newly-created",
        outcome=NC,
        reason=f"Written directly in {profile.language} ({len(rows)} row(s), versions "
               f"{', '.join(r.version for r in rows)}); no BBQ source, so labelled {NC} and validated like every template.",
        numbers={"rows": len(rows)}, source=f"{Path(rows[0].source).name} row {rows[0].row}")
        for (category, template_id), rows in rows_by_template(templates).items()]


def import_newly_created(path: Path, profile: Profile, corrections: list[Correction] | None = None,
                         others: list[TemplateRow] | None = None) -> NewlyCreated:
    """Load, validate and label an NC template file; any error stops the import with every error listed."""
    loaded = load_kobbq_templates(Path(path), corrections, profile.templates.separators, allowed_characters(profile))
    findings = validate_loaded(loaded, profile) + nc_findings(loaded.templates)
    findings += clash_findings(loaded.templates, others or [])
    raise_if_errors(f"newly-created template file {Path(path).name}", findings, "nothing was imported")
    return NewlyCreated(loaded, findings, nc_decisions(loaded.templates, profile))


def group_table(ctx: Context, path: Path) -> list[tuple[int, dict[str, str]]]:
    """The groups file's rows with their lines, read once in this process."""
    return ctx.once(("groups", path), lambda: read_groups(path, allowed_characters(ctx.profile)))


def read_groups(path: Path, allowed: str = "") -> list[tuple[int, dict[str, str]]]:
    """The groups file's rows with their lines, each group cell checked and normalised as any cell entering a release
    (``core.text``), at its row and column: else the merged template file, which nobody edits, is refused."""
    rows = read_csv_table(path, ["Category", "ID", "version", *GROUP_COLUMNS], "a groups file")
    findings = [finding for line, row in rows for column in GROUP_COLUMNS
                for finding in check_text(row.get(column, ""), Location(str(path), line, column), allowed)]
    raise_if_errors(f"groups file {path.name}", findings, "nothing was merged")
    for finding in findings:
        console.step(finding.render())
    return [(line, {**row, **{column: normalise_text(row.get(column, ""), allowed)[0] for column in GROUP_COLUMNS}})
            for line, row in rows]


def prepare(ctx: Context) -> None:
    """Before the flow run: the files the pipeline names for this stage (the groups, the newly-created templates,
    the corrections) read, so that a file that cannot be read stops in one line before Prefect starts."""
    corrections(ctx)
    cfg = ctx.pipeline.config.templates
    if ctx.pipeline.reference_mode or ctx.profile.templates.workbook is not None:
        return
    groups, newly_created = ctx.file(cfg.groups), ctx.file(cfg.newly_created)
    if groups is not None and groups.exists():
        group_table(ctx, groups)
    if newly_created is not None and newly_created.exists():
        read_tsv(newly_created)


def merge_groups(rows: list[dict[str, str]], groups_path: Path, groups: list[tuple[int, dict[str, str]]] | None = None
                 ) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Add the groups the post-edit lacks; also each row key's groups-file line. ``groups``: the file as read."""
    table: dict[tuple[str, str, str], dict[str, str]] = {}
    lines: dict[str, int] = {}
    for line, row in read_groups(groups_path) if groups is None else groups:
        key = (row["Category"].strip(), row["ID"].strip(), row["version"].strip())
        if key in table:
            raise UserError(f"template row {'|'.join(key)} already has groups above", Location(str(groups_path), line, "ID"))
        table[key] = row
        lines["|".join(key)] = line
    merged = []
    for row in rows:
        key = (row["Category"], row["ID"], row["version"])
        if key not in table:
            raise UserError(f"no groups for template row {'|'.join(key)}; add a row with "
                            f"{', '.join(GROUP_COLUMNS)}", groups_path)
        merged.append({**row, **{c: table[key].get(c, "") for c in GROUP_COLUMNS}})
    return merged, lines


def check_versions(loaded: LoadedTemplates, group_lines: dict[str, int], groups_path: Path,
                   profile: Profile) -> list[Decision]:
    """The version convention on the merged rows, each problem at the groups-file line that gave the row its groups (NC
    rows were checked in their own file); returns the decision of every template (the role each version plays)."""
    findings = []
    for finding in version_findings(loaded.templates, profile):
        key = next((t.key for t in loaded.templates if t.row == finding.where.row), "")
        line = group_lines.get(key)
        where = Location(str(groups_path), line, finding.where.column) if line else finding.where
        findings.append(Finding(finding.severity, where, finding.code, finding.message))
    raise_if_errors("the post-edited templates and their groups", findings, "nothing was merged")
    sources: dict[tuple[str, int], str] = {}  # a template's first row: where its groups were written
    for t in loaded.templates:
        sources.setdefault(t.template_key, f"{groups_path.name} row {group_lines[t.key]}" if t.key in group_lines
                           else "the newly-created templates")
    return version_decisions(loaded.templates, profile, NAME, sources)


def run(ctx: Context) -> StageOutput:
    if ctx.pipeline.reference_mode:
        reference = ctx.file(ctx.pipeline.config.translation.reference)
        loaded, _ = checked_templates(ctx, reference)
        return StageOutput({"rows": len(loaded.templates)}, {"templates": reference}, [],
                           f"{len(loaded.templates)} template rows: the released file")
    postedit = require(ctx.output("postedit", "templates"), "post-edited templates", "Run the postedit stage.")
    if ctx.profile.templates.workbook is not None:
        return _workbook_folder(ctx, postedit)
    cfg = ctx.pipeline.config.templates
    header, rows, _ = read_tsv(postedit)
    groups = require(ctx.file(cfg.groups), "template groups (N1_info, N2_info, Target_group per row)",
                     "Write them for every post-edited template row.")
    rows, group_lines = merge_groups(rows, groups, group_table(ctx, groups))
    decisions: list[Decision] = []
    if cfg.newly_created:
        nc_path = require(ctx.file(cfg.newly_created), "newly-created templates", "")
        imported = import_newly_created(nc_path, ctx.profile, others=load_kobbq_templates(
            postedit, separators=ctx.profile.templates.separators).templates)
        decisions += imported.decisions
        nc_header, nc_rows, _ = read_tsv(nc_path)
        header += [c for c in nc_header if c not in header]
        rows += nc_rows
    header += [c for c in GROUP_COLUMNS if c not in header]
    path = write_tsv_rows(ctx.stage_dir(NAME) / "templates.tsv", header, rows)
    decisions += check_versions(loaded_templates(ctx, path), group_lines, groups, ctx.profile)
    return _templates_output(ctx, path, decisions)


def _templates_output(ctx: Context, path: Path, decisions: list[Decision]) -> StageOutput:
    """The template file (or workbook folder) at ``path`` checked, counted by label, as the stage's output."""
    loaded, _ = checked_templates(ctx, path)
    labels = dict(sorted(Counter(t.label for t in loaded.templates).items()))
    return StageOutput({"rows": len(loaded.templates), **labels}, {"templates": path}, decisions,
                       f"{len(loaded.templates)} template rows ({counts_text(labels)}) in {path.name}")


def _workbook_folder(ctx: Context, folder: Path) -> StageOutput:
    """The post-edit's workbook folder, checked in the profile's format; groups and new rows are already in it."""
    cfg = ctx.pipeline.config.templates
    if cfg.groups or cfg.newly_created:
        raise UserError(f"profile {ctx.profile.name} keeps groups and new templates in its workbooks; remove "
                        "[templates] groups / newly_created from the pipeline file", ctx.pipeline.path)
    return _templates_output(ctx, folder, [])
