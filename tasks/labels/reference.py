"""The reference labels: what the released KoBBQ templates say about each BBQ template's label.

The release keeps only the survivors of the whole process. A KoBBQ template links to its BBQ
source through ``BBQ_category``/``BBQ_id`` and carries that source's label (ST or TM); rows
without a link are newly-created (NC). A BBQ template that no released template links to was
either labelled SR or dropped later by the survey, and the public files do not say which, so
it gets the outcome ``unlinked``, never a guessed SR.

Entry point: ``reference_labels(kobbq_templates, bbq_templates, profile) -> ReferenceLabels``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location
from core.profile import PaperCounts, Profile
from tasks.templates.bbq import BBQTemplate
from core.decisions import Decision, bbq_subject, template_subject
from core.findings import Finding
from tasks.labels.template_set import KEPT_LABELS, NC, group_templates
from tasks.templates.load import TemplateRow

STAGE = "labels"
UNLINKED = "unlinked"
UNLINKED_REASON = ("no released KoBBQ template links to this BBQ template: it was labelled SR or dropped by the "
                   "survey; the public files do not say which")


@dataclass(frozen=True)
class KoTemplate:
    """One released template (all its versions): its label and its BBQ links, as the file states them."""

    category: str
    template_id: int
    labels: tuple[str, ...]  # distinct labels over its rows (one, unless the file is inconsistent)
    # bbq:<BBQ_category>:<BBQ_id> of its rows; none for a newly-created template. KoBBQ: at most one;
    # EsBBQ links a template's proper-name versions (p) to BBQ's proper-name template, so two.
    links: tuple[str, ...]
    where: Location

    @property
    def subject(self) -> str:
        return template_subject(self.category, self.template_id)

    @property
    def label(self) -> str:
        return "/".join(self.labels)


@dataclass(frozen=True)
class ReferenceRow:
    """One category's reference counts beside the paper's Table 1."""

    category: str
    display: str
    bbq_templates: int  # BBQ templates of the category's BBQ files
    linked_st: int  # BBQ templates linked by an ST template
    linked_tm: int  # BBQ templates linked by a TM template
    unlinked: int  # BBQ templates nobody links to (SR or dropped by the survey)
    unlinked_proper_names: int  # of those, BBQ's proper-name variants (Proper_nouns_only = TRUE)
    nc: int  # released templates without a BBQ link
    paper: PaperCounts | None


@dataclass(frozen=True)
class ReferenceLabels:
    decisions: list[Decision]  # one per BBQ template, plus one per NC template
    rows: list[ReferenceRow]
    findings: list[Finding]  # links that do not resolve or contradict each other
    shared_links: dict[str, tuple[str, ...]] = field(default_factory=dict)  # BBQ subject -> several KoBBQ templates

    @property
    def text(self) -> str:
        return format_reference_table(self)


def released_templates(templates: list[TemplateRow], profile: Profile) -> tuple[list[KoTemplate], list[Finding]]:
    """Collapse released rows into templates (labels in KoBBQ's terms, ``TemplateFormat.meaning``); rows of
    one template that disagree are findings."""
    rows_by_template: dict[tuple[str, int], list[TemplateRow]] = {}
    for row in templates:
        rows_by_template.setdefault(row.template_key, []).append(row)
    result, findings = [], []
    for (category, template_id), rows in rows_by_template.items():
        labels = tuple(dict.fromkeys(profile.templates.meaning(r.label) for r in rows))
        links = tuple(dict.fromkeys(bbq_subject(r.bbq_category, r.bbq_id) if r.bbq_category and r.bbq_id else ""
                                    for r in rows))
        one_link = profile.templates.one_bbq_link_per_template
        where = Location(Path(rows[0].source).name, rows[0].row)
        if len(labels) > 1:
            findings.append(Finding("error", Location(where.file, where.row, "Label_annotation"), "label-mismatch",
                                    f"{category} template {template_id} has rows with labels {', '.join(labels)}"))
        if len(links) > 1 and (one_link or "" in links):
            findings.append(Finding("error", Location(where.file, where.row, "BBQ_id"), "link-mismatch",
                                    f"{category} template {template_id} has rows linking to "
                                    f"{', '.join(link or '(none)' for link in links)}"))
        kept = links[:1] if one_link else links  # one link: the first row's, as the rows should all agree
        result.append(KoTemplate(category, template_id, labels, tuple(link for link in kept if link), where))
    return result, findings


def reference_labels(kobbq_templates: list[TemplateRow], bbq_templates: list[BBQTemplate],
                     profile: Profile) -> ReferenceLabels:
    """Every BBQ template's label as the release shows it, NC templates, and the Table 1 comparison."""
    released, findings = released_templates(kobbq_templates, profile)
    items = group_templates(bbq_templates)
    known = {item.subject: item for item in items}
    linked_by: dict[str, list[KoTemplate]] = {}
    decisions: list[Decision] = []
    for template in released:
        findings.extend(_link_findings(template, known, profile))
        for link in template.links:
            linked_by.setdefault(link, []).append(template)
        if not template.links:
            decisions.append(Decision(
                stage=STAGE, subject_type="template", subject=template.subject, rule="reference-no-bbq-link",
                outcome=template.label,
                reason=f"released template {template.subject} has no BBQ link and label {template.label}: "
                       "written directly in the target language",
                numbers={"label": template.label}, source=str(template.where)))
    for item in items:
        linking = linked_by.get(item.subject, [])
        source = f"{item.rows[0].source} row {item.rows[0].row}"
        if not linking:
            decisions.append(Decision(stage=STAGE, subject_type="bbq_template", subject=item.subject,
                                      rule="reference-unlinked", outcome=UNLINKED, reason=UNLINKED_REASON,
                                      numbers={"linked_templates": 0}, source=source))
            continue
        labels = sorted({t.label for t in linking})
        names = [t.subject for t in linking]
        outcome = labels[0] if len(labels) == 1 else "conflict"
        reason = (f"{len(linking)} released template(s) ({', '.join(names)}) link to this BBQ template "
                  f"with label {' and '.join(labels)}")
        if outcome == "conflict":
            findings.append(Finding("error", linking[0].where, "link-label-conflict",
                                    f"{item.subject} is linked with different labels: {reason}"))
        decisions.append(Decision(stage=STAGE, subject_type="bbq_template", subject=item.subject,
                                  rule="reference-link", outcome=outcome, reason=reason,
                                  numbers={"linked_templates": len(linking), "templates": names},
                                  source=", ".join(str(t.where) for t in linking)))
    shared = {subject: tuple(t.subject for t in linking) for subject, linking in linked_by.items() if len(linking) > 1}
    rows = _table_rows(items, released, decisions, profile)
    # A template links once per version row: one finding per link, not one per row.
    return ReferenceLabels(decisions, rows, list(dict.fromkeys(findings)), shared)


def _link_findings(template: KoTemplate, known: dict[str, object], profile: Profile) -> list[Finding]:
    where = Location(template.where.file, template.where.row, "BBQ_id")
    findings = []
    for link in template.links:
        findings.extend(_one_link_findings(template, link, known, profile, where))
    if not template.links and any(label in KEPT_LABELS for label in template.labels):
        findings.append(Finding("warning", where, "adapted-without-link",
                                f"{template.subject} is labelled {template.label} but has no BBQ link"))
    return findings


def _one_link_findings(template: KoTemplate, link: str, known: dict[str, object], profile: Profile,
                       where: Location) -> list[Finding]:
    findings = []
    if link not in known:
        findings.append(Finding("error", where, "unknown-bbq-link",
                                f"{template.subject} links to {link}, which is not among the BBQ templates read"))
    if NC in template.labels:
        findings.append(Finding("warning", where, "nc-with-link", f"{template.subject} is labelled NC but links to {link}"))
    category = profile.category(template.category)
    bbq_category = link.split(":")[1]
    if category is not None and bbq_category not in category.bbq_categories:
        findings.append(Finding("warning", Location(where.file, where.row, "BBQ_category"), "foreign-bbq-category",
                                f"{template.subject} links to BBQ category {bbq_category}, not one of "
                                f"{', '.join(category.bbq_categories) or '(none)'} (profile)"))
    return findings


def _table_rows(items, released: list[KoTemplate], decisions: list[Decision], profile: Profile) -> list[ReferenceRow]:
    outcome = {d.subject: d.outcome for d in decisions if d.subject_type == "bbq_template"}
    proper = {item.subject for item in items
              if any(r.columns.get("Proper_nouns_only", "").upper() == "TRUE" for r in item.rows)}
    nc = Counter(t.category for t in released if not t.links)
    rows = []
    for category in profile.categories:
        subjects = [item.subject for item in items if item.category in category.bbq_categories]
        counts = Counter(outcome[s] for s in subjects)
        rows.append(ReferenceRow(
            category=category.name, display=category.display, bbq_templates=len(subjects),
            linked_st=counts["ST"], linked_tm=counts["TM"], unlinked=counts[UNLINKED],
            unlinked_proper_names=sum(1 for s in subjects if outcome[s] == UNLINKED and s in proper),
            nc=nc[category.name], paper=category.paper))
    return rows


def format_reference_table(result: ReferenceLabels) -> str:
    """The per-category comparison: release-derived counts with the paper's Table 1 in parentheses."""

    def pair(ours: int, paper: int | None) -> str:
        if paper is None:
            return f"{ours}"
        mark = "" if ours == paper else " *"
        return f"{ours} ({paper}){mark}"

    header = ["category", "BBQ", "ST linked", "TM linked", "unlinked (paper SR)", "of which proper-name", "NC"]
    lines = [header]
    totals = Counter()
    for row in result.rows:
        paper = row.paper
        lines.append([row.category, str(row.bbq_templates),
                      pair(row.linked_st, paper and paper.st), pair(row.linked_tm, paper and paper.tm),
                      pair(row.unlinked, paper and paper.sr), str(row.unlinked_proper_names),
                      pair(row.nc, paper and paper.nc)])
        for name in ("bbq_templates", "linked_st", "linked_tm", "unlinked", "unlinked_proper_names", "nc"):
            totals[name] += getattr(row, name)
        for name in ("st", "tm", "sr", "nc"):
            totals["paper_" + name] += (getattr(paper, name) or 0) if paper else 0
    # A paper that does not report a column (EsBBQ's reports templates and instances only) has no total.
    reported = {name: totals["paper_" + name] if any(row.paper and getattr(row.paper, name) is not None
                                                     for row in result.rows) else None
                for name in ("st", "tm", "sr", "nc")}
    lines.append(["total", str(totals["bbq_templates"]), pair(totals["linked_st"], reported["st"]),
                  pair(totals["linked_tm"], reported["tm"]), pair(totals["unlinked"], reported["sr"]),
                  str(totals["unlinked_proper_names"]), pair(totals["nc"], reported["nc"])])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width)
                      in enumerate(zip(line, widths))) for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    notes = ["Counts are BBQ templates (NC: released templates); the paper's Table 1 value is in parentheses,",
             "* where they differ.",
             "ST/TM linked: BBQ templates that a released template links to (BBQ_category/BBQ_id) with that label.",
             "Unlinked: no released template links to it, so it was labelled SR or dropped by the survey; the public",
             "files do not say which: unlinked >= the paper's SR is expected, equality is not.",
             "Proper-name: unlinked BBQ templates that are BBQ's proper-name variants (Proper_nouns_only = TRUE)."]
    for subject, templates in sorted(result.shared_links.items()):
        notes.append(f"{subject} is linked by {len(templates)} released templates ({', '.join(templates)}); "
                     "it is counted once.")
    if result.findings:
        counts = Counter(finding.severity for finding in result.findings)
        said = ", ".join(f"{counts[severity]} {severity}(s)" for severity in ("error", "warning") if counts[severity])
        notes += ["", f"The release's links are not consistent ({said}); what the links say is reported above as it "
                  "is:"]
        notes += [f"  {finding.render()}" for finding in result.findings]
    return "\n".join(text + [""] + notes)
