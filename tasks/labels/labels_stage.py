"""The labels stage: every English BBQ template gets its final label (ST / TM / SR) and rationale in ``labels.csv``,
with the annotators' agreement when their files are given. In real-data mode the labels are those the release's BBQ
links imply (``reference_labels``); a BBQ template nobody links to was labelled SR or dropped by the survey, and the
public files do not say which, so it is ``unlinked``, never a guessed SR."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.atomic import write_text
from core.console import counts_text
from core.decisions import Decision, bbq_subject, template_subject
from core.errors import Location, UserError
from core.findings import Finding
from core.profile import PaperCounts, Profile
from core.stage_contract import Context, StageOutput, require
from core.tables import write_csv_rows
from core.text import allowed_characters
from tasks.labels.agreement import AgreementReport, agreement, agreement_table, aligned
from tasks.labels.annotations import import_annotations, votes_by_template
from tasks.labels.consensus import Consensus, load_consensus, require_final_labels
from tasks.labels.template_set import KEPT_LABELS, LabelItem, NC, group_templates, load_label_items
from tasks.templates.bbq import BBQTemplate, load_bbq_templates
from tasks.templates.load import TemplateRow, rows_by_template
from tasks.templates.stage_templates import checked_templates

NAME = "labels"
LABELS_COLUMNS = ["subject", "label", "rationale"]


@dataclass(frozen=True)
class FinalLabels:
    """What the labels stage decided: the items, the consensus and, with annotators' files, their agreement."""

    items: list[LabelItem]
    consensus: Consensus
    agreement: AgreementReport | None  # None without annotators' files
    annotator_files: int

    def counts(self) -> dict[str, int]:
        """Final label -> BBQ templates, in label order."""
        return dict(sorted(Counter(f.label for f in self.consensus.labels.values()).items()))


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
    """Released rows collapsed into templates (labels in KoBBQ's terms); rows that disagree: findings."""
    result, findings = [], []
    for (category, template_id), rows in rows_by_template(templates).items():
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
                stage=NAME, subject_type="template", subject=template.subject, rule="reference-no-bbq-link",
                outcome=template.label,
                reason=f"released template {template.subject} has no BBQ link and label {template.label}: "
                       "written directly in the target language",
                numbers={"label": template.label}, source=str(template.where)))
    for item in items:
        linking = linked_by.get(item.subject, [])
        source = f"{item.rows[0].source} row {item.rows[0].row}"
        if not linking:
            decisions.append(Decision(stage=NAME, subject_type="bbq_template", subject=item.subject,
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
        decisions.append(Decision(stage=NAME, subject_type="bbq_template", subject=item.subject,
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
    if not template.links and any(label in KEPT_LABELS for label in template.labels):
        findings.append(Finding("warning", where, "adapted-without-link",
                                f"{template.subject} is labelled {template.label} but has no BBQ link"))
    category = profile.category(template.category)
    for link in template.links:
        if link not in known:
            findings.append(Finding("error", where, "unknown-bbq-link",
                                    f"{template.subject} links to {link}, which is not among the BBQ templates read"))
        if NC in template.labels:
            findings.append(Finding("warning", where, "nc-with-link",
                                    f"{template.subject} is labelled NC but links to {link}"))
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

    def line(name: str, counts: list[int], paper: dict[str, int | None]) -> list[str]:
        bbq, st, tm, unlinked, proper, nc = counts
        return [name, str(bbq), pair(st, paper["st"]), pair(tm, paper["tm"]), pair(unlinked, paper["sr"]),
                str(proper), pair(nc, paper["nc"])]

    columns = ("st", "tm", "sr", "nc")
    counts = [[row.bbq_templates, row.linked_st, row.linked_tm, row.unlinked, row.unlinked_proper_names, row.nc]
              for row in result.rows]
    papers = [dict(zip(columns, (p.st, p.tm, p.sr, p.nc) if (p := row.paper) else (None,) * 4)) for row in result.rows]
    # A paper that does not report a column (EsBBQ's reports templates and instances only) has no total.
    reported = {name: sum(paper[name] or 0 for paper in papers) if any(paper[name] is not None for paper in papers)
                else None for name in columns}
    lines = [["category", "BBQ", "ST linked", "TM linked", "unlinked (paper SR)", "of which proper-name", "NC"],
             *(line(row.category, c, paper) for row, c, paper in zip(result.rows, counts, papers)),
             line("total", [sum(column) for column in zip(*counts)] if counts else [0] * 6, reported)]
    text = aligned(lines)
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


def final_labels(bbq: Path, consensus: Path, annotations: list[Path], profile: Profile,
                 categories: list[str] | None = None, not_taken: list[str] | None = None) -> FinalLabels:
    """Every BBQ template's final label from the consensus file, with the annotators' votes; one without a final label
    is an error (nothing is translated on a guess)."""
    bbq_rows, items = load_label_items(bbq, profile, categories, not_taken)
    report, votes = None, None
    if annotations:
        annotators = import_annotations(annotations, items, profile.labels.require_rationale, profile.name)
        report, votes = agreement(annotators, items), votes_by_template(annotators)
    final = load_consensus(consensus, bbq_rows, profile.labels.require_rationale, annotations=votes,
                           allowed=allowed_characters(profile))
    require_final_labels(bbq_rows, final)
    return FinalLabels(items, final, report, len(annotations))


def write_labels(labels: FinalLabels, folder: Path) -> dict[str, Path]:
    """``labels.csv`` and, with annotators' files, ``agreement.txt``, by their roles."""
    rows = [[s, f.label, f.rationale] for s, f in sorted(labels.consensus.labels.items())]
    outputs = {"labels": write_csv_rows(folder / "labels.csv", LABELS_COLUMNS, rows)}
    if labels.agreement is not None:
        outputs["report:labels_agreement.txt"] = write_text(folder / "agreement.txt", labels.agreement.text + "\n")
    return outputs


def labels_from_links(templates: list[TemplateRow], bbq: Path, profile: Profile) -> ReferenceLabels:
    """Real-data mode: the labels a released template file implies through its BBQ links."""
    bbq_rows, _ = load_bbq_templates(bbq)
    return reference_labels(templates, bbq_rows, profile)


# --- the stage in a pipeline -------------------------------------------------------------------

def run(ctx: Context) -> StageOutput:
    cfg = ctx.pipeline.config.labels
    bbq_path = require(ctx.file(cfg.bbq), "English BBQ templates", "Set labels.bbq to their folder.")
    if cfg.reference:
        return _from_reference(ctx, bbq_path)
    profile = ctx.profile.argument
    subset = "".join(f" --not-taken {template}" for template in cfg.not_taken)
    consensus_path = require(ctx.file(cfg.consensus), "annotators' labels (the consensus file)",
                             f"Send the workbooks of `kobbq labels export --profile {profile} --bbq {bbq_path}{subset} "
                             f"--annotator NAME --out {ctx.work / NAME / 'workbooks'}` (one --annotator per person) to "
                             f"the annotators, compare their answers with `kobbq labels import --profile {profile} "
                             f"--bbq {bbq_path}{subset} FILES --draft draft.csv`, and write the final label and rationale of "
                             f"every template into the consensus file ({ctx.file(cfg.consensus) or 'labels.consensus'}).")
    annotations = ctx.pipeline.files(cfg.annotations)
    if cfg.annotations and not annotations:
        raise UserError(f"labels.annotations = {cfg.annotations} matches no file (patterns are relative to the "
                        "pipeline file); correct the pattern, or remove the line to go without the annotators' votes",
                        ctx.pipeline.path)
    labels = final_labels(bbq_path, consensus_path, annotations, ctx.profile, cfg.categories or None,
                          cfg.not_taken)
    counts = labels.counts()
    tables = {"agreement": agreement_table(labels.agreement)} if labels.agreement is not None else {}
    return StageOutput(counts, write_labels(labels, ctx.stage_dir(NAME)), labels.consensus.decisions,
                       f"final labels {counts_text(counts)} from {labels.annotator_files} annotator file(s) and the "
                       "consensus", tables)


def _from_reference(ctx: Context, bbq_path: Path) -> StageOutput:
    reference = require(ctx.file(ctx.pipeline.config.labels.reference), "reference template file", "")
    result = labels_from_links(checked_templates(ctx, reference)[0].templates, bbq_path, ctx.profile)
    report = write_text(ctx.stage_dir(NAME) / "reference_labels.txt", result.text + "\n")
    outcomes = dict(sorted(Counter(d.outcome.split(":")[0] for d in result.decisions).items()))
    return StageOutput(outcomes, {"report:labels_reference.txt": report}, result.decisions,
                       f"labels from the release's BBQ links: {counts_text(outcomes)}")
