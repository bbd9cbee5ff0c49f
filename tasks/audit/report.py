"""The HTML audit report: one self-contained, offline ``audit.html`` in the release folder.

It is a view of files the release already holds: the decision log (``decisions.csv``), the
manifest, the Table 1 comparison (``table1.csv``), the survey funnel (``funnel.md``, when the
survey stage ran) and the evaluation split (4 samples a template row, for the BBQ links of
templates no translation decision names; never the full sample set). It shows:

- the funnel per stage and category: templates in the log, each dropping rule's count, and
  what reached the release (template IDs, rows, samples), beside the paper's numbers;
- charts (``tasks.audit.charts``, inline SVG): the funnel, samples per category against the paper, and
  the survey rules' numbers (every type-1 group's votes against 2x / 0.5x the equal share, type-2
  shares against 2/3, "no stereotype" shares against 50%; ``survey_votes.csv``), each above its table;
- the Table 1 comparison, every difference marked explained or not;
- a section per category listing every template's fate (label, BBQ source, stereotype,
  status, samples, the dropping decision) with all its decisions folded underneath;
- a search box that filters templates in the browser (inline JavaScript, no network).

Text from input files (stereotypes, reasons) is escaped by jinja2's autoescaping.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from core.atomic import write_text
from core.fingerprint import sha256_file
from core.profile import Profile
from core.tables import read_records
from tasks.audit.charts import audit_charts
from tasks.audit.fates import AuditLog, Fate, load_audit_log, stage_rank, stereotype_text
from tasks.audit.lineage import display_id
from core.decisions import Decision
from tasks.release.assemble import write_release_files
from tasks.release.inputs import BuildInputs
from tasks.release.write import write_json
from tasks.survey.rule_table import STEREOTYPE, rules_of

TEMPLATE_DIR = Path(__file__).parent / "templates"
REPORT_NAME = "audit.html"
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
    labelled, removed = _bbq_counts(log, profile)
    has_labelling = any(d.stage == "labels" and d.subject_type == "bbq_template" for d in log.decisions)
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
            bbq_labelled=labelled[name] if has_labelling else None, bbq_removed=removed[name] if has_labelling else None,
            templates=len(fates), drops=dict(Counter(f.drop_rule for f in fates if f.drop_rule)),
            released=len(released), rows=int(in_manifest.get("template_rows", 0)),
            samples=int(in_manifest.get("samples", 0)),
            paper_before=paper.templates_before if paper else None, paper_after=paper.templates_after if paper else None,
            paper_samples=paper.samples if paper else None))
    return rules, rows


def _bbq_counts(log: AuditLog, profile: Profile) -> tuple[Counter[str], Counter[str]]:
    """BBQ templates labelled and removed (SR), per category of this profile."""
    category_of = {bbq: c.name for c in profile.categories for bbq in c.bbq_categories}
    labelled: dict[str, set[str]] = defaultdict(set)
    removed: dict[str, set[str]] = defaultdict(set)
    for decision in log.decisions:
        if decision.stage != "labels" or decision.subject_type != "bbq_template":
            continue
        bbq_category = decision.subject.split(":")[1]
        name = category_of.get(bbq_category, bbq_category)
        labelled[name].add(decision.subject)
        if decision.rule == SR_RULE and decision.outcome == "drop":
            removed[name].add(decision.subject)
    return Counter({k: len(v) for k, v in labelled.items()}), Counter({k: len(v) for k, v in removed.items()})


def read_table1(path: Path) -> tuple[list[str], dict[str, dict[str, Table1Cell]]]:
    """``table1.csv`` pivoted: the columns in file order, category -> column -> cell."""
    columns: list[str] = []
    table: dict[str, dict[str, Table1Cell]] = {}
    if not path.exists():
        return columns, table
    for _, row in read_records(path)[1]:
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


def _numbers(decision: Decision) -> str:
    return json.dumps(decision.numbers, ensure_ascii=False, sort_keys=True, default=str) if decision.numbers else ""


def _template_entry(fate: Fate, profile: Profile) -> dict[str, object]:
    stereotype = stereotype_text(fate.stereotype)[1] if fate.stereotype else ""
    decisions = [{"stage": d.stage, "rule": d.rule, "outcome": d.outcome, "override": d.override,
                  "subject": d.subject, "reason": d.reason, "numbers": _numbers(d), "source": d.source}
                 for d in (*fate.drops, *(d for d in fate.decisions if all(d is not x for x in fate.drops)))]
    return {"subject": fate.subject, "display_id": display_id(fate, profile), "versions": ", ".join(fate.versions),
            "label": fate.label, "bbq": fate.bbq, "stereotype": stereotype, "status": fate.status,
            "in_release": fate.in_release, "samples": fate.samples, "drop_rule": fate.drop_rule,
            "drop_reason": fate.drops[-1].reason if fate.drops else "", "decisions": decisions}


def render_audit_html(log: AuditLog, profile: Profile, funnel_markdown: str | None) -> str:
    rules, funnel = funnel_rows(log, profile)
    table1_columns, table1 = read_table1(log.release_dir / "table1.csv")
    sections = []
    for row in funnel:
        fates = sorted((f for f in log.fates.values() if f.category == row.category), key=lambda f: f.template_id)
        sections.append({"category": row.category, "display": row.display, "anchor": row.category.lower(),
                         "released": row.released, "templates": [_template_entry(f, profile) for f in fates]})
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters["thousands"] = lambda value: f"{int(value):,}" if str(value).lstrip("-").isdigit() else value
    environment.filters["px"] = lambda value: f"{value:.1f}"
    return environment.get_template("audit.html.j2").render(
        charts=audit_charts(funnel, rules, log.release_dir, log.decisions, profile),
        survey_questions=survey_questions(log.decisions),
        manifest=log.manifest, profile=profile, rules=rules, funnel=funnel,
        published=profile.release.paper_total_samples is not None or any(c.paper for c in profile.categories),
        drop_totals={rule: sum(row.drops.get(rule, 0) for row in funnel) for rule in rules}, table1_columns=table1_columns,
        table1=table1, table1_categories=[r.category for r in funnel if r.category in table1]
        + sorted(set(table1) - {r.category for r in funnel}),
        displays={c.name: c.display for c in profile.categories}, funnel_markdown=funnel_markdown,
        sections=sections, decision_count=len(log.decisions),
        overrides=sum(1 for d in log.decisions if d.override))


def write_audit_report(release_dir: Path, profile: Profile) -> Path:
    """Write ``audit.html`` into ``release_dir`` atomically (temp file + os.replace); return its path.

    Reads only files of the release folder; the build calls it in the staging folder before
    publishing, after the decision log, table1.csv and manifest.json are written.
    """
    release_dir = Path(release_dir)
    log = load_audit_log(release_dir, profile)
    funnel_path = release_dir / "funnel.md"
    funnel_markdown = funnel_path.read_text(encoding="utf-8") if funnel_path.exists() else None
    html = render_audit_html(log, profile, funnel_markdown)
    return write_text(release_dir / REPORT_NAME, html)


def write_release_folder(folder: Path, inputs: BuildInputs, *args: Any, **kwargs: Any) -> dict[str, object]:
    """Every file of a release: the release's own (``tasks.release.assemble.write_release_files``, which takes the
    rest of the arguments), then the audit report, which reads them; the manifest then records the report's hash
    too. Composed here, above the release package, because the report is a view of the finished folder."""
    manifest = write_release_files(folder, inputs, *args, **kwargs)
    audit = write_audit_report(folder, inputs.profile)
    manifest["outputs"] = {**manifest["outputs"], audit.name: sha256_file(audit)}  # type: ignore[dict-item]
    write_json(manifest, folder / "manifest.json")
    return manifest
