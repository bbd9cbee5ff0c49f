"""The postedit stage: the translator's returned workbooks become a template file with the post-edit report. In
real-data mode the released file is the post-edit (``link_reference``): each ST/TM row is linked to its BBQ source,
one decision per template, counted per category and label as the paper's Table 1."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from core.atomic import write_text
from core.decisions import Decision, bbq_subject, template_subject
from core.findings import raise_if_errors
from core.profile import Profile
from core.stage_contract import Context, StageOutput, Waiting, require
from tasks.templates.bbq import BBQTemplate, load_bbq_templates
from tasks.templates.load import TemplateRow, rows_by_template
from tasks.templates.stage_templates import checked_templates
from tasks.translation.glossary import Glossary
from tasks.translation.postedit import import_postedit, render_report
from tasks.translation.pretranslate_stage import glossary_of

NAME = "postedit"
REPORT = "postedit_report.md"


@dataclass(frozen=True)
class ReferenceLinks:
    decisions: list[Decision]
    linked: Counter  # (category, label) -> distinct BBQ templates linked (the unit of the paper's Table 1)
    unlinked: list[str]  # adapted ST/TM templates whose BBQ link is missing or names no BBQ template
    rows_linked: int  # ST/TM rows linked
    rows: int  # ST/TM rows
    substitutions: list[tuple[str, str, str]]  # (template subject, English term, its substitute in the culture)
    shared: dict[str, list[str]]  # BBQ template -> the adapted templates made from it, where more than one

    def render(self, profile: Profile) -> str:
        """The links counted per category and label beside the paper's Table 1, the shared and missing links."""
        rows = [(c.name, label, self.linked.get((c.name, label), 0),
                 None if c.paper is None else c.paper.st if label == "ST" else c.paper.tm)
                for c in profile.categories for label in ("ST", "TM")]
        matches = sum(1 for *_, ours, paper in rows if ours == paper)
        lines = [f"{self.rows_linked} of {self.rows} ST/TM rows link to a BBQ template "
                 f"({sum(self.linked.values())} distinct BBQ templates); {matches} of {len(rows)} category x label "
                 "counts equal the paper's Table 1"]
        lines += [f"  {c:28} {label}: {ours:3d} linked, paper {paper}" + ("" if ours == paper else "  <- differs")
                  for c, label, ours, paper in rows if ours or paper]
        lines += [f"  {link} is the source of {len(subjects)} adapted templates: {', '.join(subjects)}"
                  for link, subjects in sorted(self.shared.items())]
        lines += [f"  unlinked: {s}" for s in self.unlinked]
        return "\n".join(lines)


def link_reference(templates: list[TemplateRow], bbq: list[BBQTemplate], profile: Profile,
                   glossary: Glossary) -> ReferenceLinks:
    """One ``postedit-reference-link`` decision per adapted ST/TM template, plus its substitutions."""
    wanted = set(profile.translation.labels)
    bbq_by_subject: dict[str, list[BBQTemplate]] = defaultdict(list)
    for row in bbq:
        bbq_by_subject[row.subject].append(row)
    by_template = {template_subject(*key): rows
                   for key, rows in rows_by_template([t for t in templates if t.label in wanted]).items()}
    decisions, unlinked, substitutions = [], [], []
    linked_sets: dict[tuple[str, str], set[str]] = defaultdict(set)
    made_from: dict[str, list[str]] = defaultdict(list)
    rows_linked = 0
    for subject, rows in sorted(by_template.items()):
        first = rows[0]
        link = bbq_subject(first.bbq_category, first.bbq_id) if first.bbq_category and first.bbq_id else ""
        if sources := bbq_by_subject.get(link, []):
            linked_sets[(first.category, first.label)].add(link)
            made_from[link].append(subject)
            rows_linked += len(rows)
            english = " ".join(v for s in sources for v in (*s.texts.values(), s.names, s.lexical))
            adapted = " ".join(v for t in rows for v in (*t.texts.values(), t.columns.get("Names", ""),
                                                           t.columns.get("Lexical_diversity", "")))
            found = sorted({(e.source, e.target) for e in glossary.terms_in(english) if e.target in adapted})
            substitutions += [(subject, a, b) for a, b in found]
            decisions.append(Decision(
                NAME, "template", subject, "postedit-reference-link", f"linked:{link}",
                f"{subject} ({first.label}, {len(rows)} rows) is the released post-edit of {link} "
                f"({len(sources)} BBQ rows)", {"rows": len(rows), "bbq_rows": len(sources), "label": first.label},
                source=first.source))
            if found:
                text = "; ".join(f"{a} -> {b}" for a, b in found)
                decisions.append(Decision(NAME, "template", subject, "cultural-substitution", text,
                                          f"the released post-edit adapts {len(found)} glossary term(s) of {link}: "
                                          f"{text}", {"terms": dict(found)}, source=first.source))
        else:
            unlinked.append(f"{subject} ({first.label}): BBQ link {link or '(none)'} names no BBQ template")
            decisions.append(Decision(
                NAME, "template", subject, "postedit-reference-link", "unlinked",
                f"{subject} ({first.label}) names BBQ template {link or '(none)'}, which the BBQ files do not have",
                {"rows": len(rows), "label": first.label}, source=first.source))
    rows_total = sum(len(r) for r in by_template.values())
    linked = Counter({key: len(links) for key, links in linked_sets.items()})
    shared = {link: subjects for link, subjects in made_from.items() if len(subjects) > 1}
    return ReferenceLinks(decisions, linked, unlinked, rows_linked, rows_total, substitutions, shared)


def returned_workbooks(ctx: Context) -> list[Path]:
    """The translator's workbooks: the ones the pipeline names one by one, else each workbook sent out, by its name in
    the folder they are returned to (waits for any not there yet)."""
    if given := ctx.pipeline.config.translation.workbooks:
        return [ctx.file(path) for path in given]  # type: ignore[misc]
    sent_dir = ctx.output("pretranslate", "workbooks")
    sent = sorted(sent_dir.glob("*.xlsx")) if sent_dir else []
    returned_dir = ctx.file(ctx.pipeline.config.translation.returned)
    hint = (f"Send {', '.join(p.name for p in sent)} (in {sent[0].parent if sent else 'the work folder'}) to the "
            f"translator and put the returned workbooks, same names, in {returned_dir}.")
    require(returned_dir, "the translator's post-edited workbooks", hint)
    if missing := [p.name for p in sent if not (returned_dir / p.name).exists()]:
        raise Waiting(f"the translator's post-edited workbooks: {', '.join(missing)} not yet in {returned_dir}", hint)
    return [returned_dir / p.name for p in sent]  # type: ignore[operator]


def run(ctx: Context) -> StageOutput:
    if ctx.pipeline.reference_mode:
        return _from_reference(ctx)
    # The profile's template format (postedit_templates.tsv, or the folder postedit_templates of workbooks); the
    # returned drafts are compared with those of the workbooks the current pre-translation sent out.
    folder = ctx.stage_dir(NAME)
    out = folder / ("postedit_templates" if ctx.profile.templates.workbook is not None else "postedit_templates.tsv")
    result = import_postedit(returned_workbooks(ctx), ctx.profile, out, glossary_of(ctx),
                             ctx.output("pretranslate", "workbooks"))
    raise_if_errors("the returned workbooks", result.findings, "nothing was imported")
    report = write_text(folder / REPORT, render_report(result))
    warnings = sum(1 for f in result.findings if f.severity == "warning")
    return StageOutput({"rows": len(result.rows)}, {"templates": result.tsv_path, f"report:{REPORT}": report},
                       result.decisions, f"{len(result.rows)} post-edited template rows imported"
                       + (f"; {warnings} warning(s), listed in {REPORT}" if warnings else ""))


def _from_reference(ctx: Context) -> StageOutput:
    """Real-data mode: the released template file is the post-edit; its rows are linked to BBQ."""
    cfg = ctx.pipeline.config
    reference = require(ctx.file(cfg.translation.reference), "reference post-edit", "")
    released = checked_templates(ctx, reference)[0].templates
    bbq, _ = load_bbq_templates(ctx.file(cfg.labels.bbq))  # type: ignore[arg-type]
    result = link_reference(released, bbq, ctx.profile, glossary_of(ctx))
    counts = {"rows_linked": result.rows_linked, "rows": result.rows, "unlinked": len(result.unlinked)}
    return StageOutput(counts, {"templates": reference}, result.decisions,
                       f"{result.rows_linked} of {result.rows} ST/TM rows of {reference.name} linked to BBQ",
                       text=result.render(ctx.profile))
