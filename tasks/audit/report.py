"""The HTML audit report: one self-contained, offline ``audit.html`` (``templates/audit.html.j2``; what it shows:
``docs/guides/audit-a-release.md``). It is a view of what the release holds, made by the build from what it wrote
(``write_release_folder``), never read back; text from input files is escaped by jinja2's autoescaping.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
from markdown_it import MarkdownIt

from core.atomic import write_text
from core.paths import AUDIT_TEMPLATES
from core.profile import Profile
from core.tables import markdown_table
from core.release_folder import AUDIT
from tasks.audit.charts import audit_charts, parse_votes
from tasks.audit.fates import AuditLog, Fate, build_audit_log, stage_rank, stereotype_text
from tasks.audit.lineage import display_id
from core.decisions import Decision, numbers_text
from core.findings import Finding
from tasks.release.assemble import ExpandedRelease, ReleaseFiles, write_manifest, write_release_files
from tasks.release.checks import ValidationReport
from tasks.release.inputs import BuildInputs
from tasks.release.table1 import csv_rows
from tasks.survey.survey_stage import FUNNEL, VOTES
from tasks.templates.load import LoadedTemplates
from tasks.survey.rule_table import STEREOTYPE, rules_of

SR_RULE = "sample-removed"  # labelling: the BBQ template was excluded (SR)


@dataclass(frozen=True)
class FunnelRow:
    category: str
    display: str
    bbq_labelled: int | None  # BBQ templates with a labelling decision, None when labelling is not in the log
    bbq_removed: int | None
    templates: int
    drops: dict[str, int]  # drop rule -> templates it dropped
    released: int
    rows: int
    samples: int
    paper_before: int | None
    paper_after: int | None
    paper_samples: int | None


@dataclass(frozen=True)
class Table1Cell:
    ours: str
    paper: str
    differs: bool
    explained: bool
    note: str


def funnel_rows(log: AuditLog, profile: Profile) -> tuple[list[str], list[FunnelRow]]:
    """Per category: templates in the log, drops by the rule that decided them, what was released."""
    by_category: dict[str, list[Fate]] = defaultdict(list)
    for fate in log.fates.values():
        by_category[fate.category].append(fate)
    rules = sorted({f.drop_rule for f in log.fates.values() if f.drop_rule},
                   key=lambda r: (stage_rank(r.split(": ", 1)[0]), r))
    bbq = _bbq_counts(log, profile)
    manifest_categories = log.manifest.get("categories", {})
    names = [c.name for c in profile.categories] + sorted(set(by_category) - set(profile.category_names))
    rows = []
    for name in names:
        fates = by_category.get(name, [])
        category = profile.category(name)
        paper = category.paper if category else None
        released = [f for f in fates if f.in_release]
        in_manifest = manifest_categories.get(name, {})
        if not fates and not in_manifest:
            continue
        rows.append(FunnelRow(
            category=name, display=category.display if category else name,
            bbq_labelled=bbq[0][name] if bbq else None, bbq_removed=bbq[1][name] if bbq else None,
            templates=len(fates), drops=dict(Counter(f.drop_rule for f in fates if f.drop_rule)),
            released=len(released), rows=int(in_manifest.get("template_rows", 0)),
            samples=int(in_manifest.get("samples", 0)),
            paper_before=paper.templates_before if paper else None, paper_after=paper.templates_after if paper else None,
            paper_samples=paper.samples if paper else None))
    return rules, rows


def _bbq_counts(log: AuditLog, profile: Profile) -> tuple[Counter[str], Counter[str]] | None:
    """BBQ templates labelled and removed (SR) per category; None when labelling is not in the log."""
    category_of = {bbq: c.name for c in profile.categories for bbq in c.bbq_categories}
    labels = [d for d in log.decisions if d.stage == "labels" and d.subject_type == "bbq_template"]

    def per_category(decisions: Iterable[Decision]) -> Counter[str]:
        categories = (subject.split(":")[1] for subject in {d.subject for d in decisions})  # each template once
        return Counter(category_of.get(category, category) for category in categories)

    removed = (d for d in labels if d.rule == SR_RULE and d.outcome == "drop")
    return (per_category(labels), per_category(removed)) if labels else None


def table1_cells(rows: list[dict[str, str]]) -> tuple[list[str], dict[str, dict[str, Table1Cell]]]:
    """``table1.csv``'s rows pivoted: the columns in order, and category -> column -> cell."""
    columns: list[str] = []
    table: dict[str, dict[str, Table1Cell]] = {}
    for row in rows:
        if row["column"] not in columns:
            columns.append(row["column"])
        table.setdefault(row["category"], {})[row["column"]] = Table1Cell(
            ours=row["ours"], paper=row["paper"], differs=row["difference"] not in ("", "0"),
            explained=row["explained"] == "true", note=row["note"])
    return columns, table


def survey_questions(decisions: list[Decision]) -> list[dict[str, object]]:
    """The table under the survey charts: per judged question, each rule's outcome with its reason (numbers)."""
    voted = {rule.name for rule in rules_of(STEREOTYPE) if rule.needs_result}  # the rules that judge the votes
    questions: dict[str, dict[str, object]] = {}
    for d in decisions:
        if d.stage != "survey" or d.subject_type != "stereotype" or d.rule not in voted:
            continue
        category, text = stereotype_text(d.subject)
        entry = questions.setdefault(str(d.numbers.get("question_id", d.subject)), {
            "category": category, "stereotype": text, "survey_type": d.numbers.get("survey_type", ""),
            "groups": " vs ".join(map(str, d.numbers.get("groups") or [])), "rules": []})
        entry["rules"].append({"rule": d.rule, "outcome": d.outcome, "reason": d.reason, "override": d.override})
    return list(questions.values())


def _template_entry(fate: Fate, profile: Profile) -> dict[str, object]:
    stereotype = stereotype_text(fate.stereotype)[1] if fate.stereotype else ""
    decisions = [{"stage": d.stage, "rule": d.rule, "outcome": d.outcome, "override": d.override,
                  "subject": d.subject, "reason": d.reason, "numbers": numbers_text(d), "source": d.source}
                 for d in (*fate.drops, *(d for d in fate.decisions if all(d is not x for x in fate.drops)))]
    return {"subject": fate.subject, "display_id": display_id(fate, profile), "versions": ", ".join(fate.versions),
            "label": fate.label, "bbq": fate.bbq, "stereotype": stereotype, "status": fate.status,
            "in_release": fate.in_release, "samples": fate.samples, "drop_rule": fate.drop_rule,
            "drop_reason": fate.drops[0].reason if fate.drops else "", "decisions": decisions}


def render_audit_html(log: AuditLog, profile: Profile, table1_rows: list[dict[str, str]],
                      funnel_markdown: str | None = None, votes: str = "") -> str:
    """The page: the decision log, Table 1's rows, the survey's funnel (markdown) and votes (CSV text), if any."""
    rules, funnel = funnel_rows(log, profile)
    table1_columns, table1 = table1_cells(table1_rows)
    sections = []
    for row in funnel:
        fates = sorted((f for f in log.fates.values() if f.category == row.category), key=lambda f: f.template_id)
        sections.append({"category": row.category, "display": row.display, "anchor": row.category.lower(),
                         "released": row.released, "templates": [_template_entry(f, profile) for f in fates]})
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(AUDIT_TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters["thousands"] = lambda value: f"{int(value):,}" if str(value).lstrip("-").isdigit() else value
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")  # input files' text stays escaped
    environment.filters["markdown"] = lambda text: markupsafe.Markup(markdown.render(text))
    return environment.get_template("audit.html.j2").render(
        charts=audit_charts(funnel, rules, parse_votes(votes), log.decisions, profile),
        survey_questions=survey_questions(log.decisions),
        manifest=log.manifest, profile=profile, rules=rules, funnel=funnel,
        published=profile.release.paper_total_samples is not None or any(c.paper for c in profile.categories),
        drop_totals={rule: sum(row.drops.get(rule, 0) for row in funnel) for rule in rules}, table1_columns=table1_columns,
        table1=table1, table1_categories=[r.category for r in funnel if r.category in table1]
        + sorted(set(table1) - {r.category for r in funnel}),
        displays={c.name: c.display for c in profile.categories}, funnel_markdown=funnel_markdown,
        sections=sections, decision_count=len(log.decisions),
        overrides=sum(1 for d in log.decisions if d.override))


@dataclass(frozen=True)
class WrittenRelease:
    """A release as written: its manifest and its run's tables, made from what the build held, not read back."""

    manifest: dict[str, object]
    tables: dict[str, list[dict[str, object]]]
    summary: str  # markdown: the release in a few lines, then the funnel


def write_release_folder(folder: Path, inputs: BuildInputs, loaded: LoadedTemplates, findings: list[Finding],
                         release: ExpandedRelease, decisions: list[Decision], **options: Any) -> WrittenRelease:
    """Every file of a release: its own (``write_release_files``, given the ``options``), the audit report, then the
    manifest. Composed here, above the release package: the report is a view of the finished release."""

    def audit(files: ReleaseFiles) -> tuple[AuditLog, list[dict[str, str]]]:
        """Written while the checks run: the page shows neither their result nor a twin (nor do the log and rows kept
        for the run's tables)."""
        log, table1 = build_audit_log(folder, files.decisions, files.facts), csv_rows(files.table)
        write_text(folder / AUDIT, render_audit_html(log, inputs.profile, table1, files.reports.get(FUNNEL),
                                                     files.reports.get(VOTES, "")))
        return log, table1

    def manifest(files: ReleaseFiles, audited: tuple[AuditLog, list[dict[str, str]]]) -> WrittenRelease:
        written = write_manifest(folder, inputs.profile, files.facts)
        log, table1 = audited
        tables = release_tables(log, inputs.profile, table1, files.validation)
        return WrittenRelease(written, tables, release_summary(written, tables))

    return write_release_files(folder, inputs, loaded, findings, release, decisions, beside=audit, then=manifest,
                               **options)


def release_tables(log: AuditLog, profile: Profile, table1: list[dict[str, str]],
                   validation: ValidationReport | None) -> dict[str, list[dict[str, object]]]:
    """The release's tables for its run: the funnel per category, Table 1, the validation result."""
    rules, funnel = funnel_rows(log, profile)
    tables: dict[str, list[dict[str, object]]] = {"funnel": [
        {"category": row.display, "templates in the log": row.templates,
         **{f"dropped by {rule}": row.drops.get(rule, 0) for rule in rules},
         "kept": row.released, "samples": row.samples,
         "paper samples": "-" if row.paper_samples is None else row.paper_samples} for row in funnel]}
    if table1:
        tables["table1"] = list(table1)
    if validation is not None:
        tables["validation"] = [{"set": o.sample_set, "rule": o.rule, "expectation": o.expectation,
                                 "column": o.column, "result": "pass" if o.success else "FAIL",
                                 "rows breaking it": o.unexpected_count} for o in validation.outcomes]
    return tables


def release_summary(manifest: dict[str, object], tables: dict[str, list[dict[str, object]]]) -> str:
    """The release in a few lines of markdown, then its funnel: what its run shows first."""
    validation = tables.get("validation", [])
    passed = sum(row["result"] == "pass" for row in validation)
    differences = manifest.get("table1_differences", [])
    lines = [f"## {manifest['release']}: {manifest['samples']:,} samples ({manifest['test_samples']:,} in the test "
             "split)", "",
             f"{manifest['template_ids']} template IDs ({manifest['template_rows']} rows) in "
             f"{len(manifest['categories'])} categories; paper: {manifest.get('paper_total_samples') or '-'} samples.",
             f"Validation: {passed} of {len(validation)} expectations passed.",
             f"Table 1: {len(differences)} difference(s) from the paper, "
             f"{sum(1 for d in differences if not d['explained'])} not explained by the inputs.", ""]
    return "\n".join(lines + records_table(tables["funnel"]))


def records_table(rows: list[dict[str, object]]) -> list[str]:
    """Rows as a markdown table's lines (none for no rows)."""
    return markdown_table(list(rows[0]), [[row.get(c, "") for c in rows[0]] for row in rows]) if rows else []
