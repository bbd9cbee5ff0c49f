"""The Table 1 report: the build's templates and samples per category beside the paper's, every difference marked.
A difference is *explained* when the build sees it itself (two template IDs sharing one BBQ link count twice as IDs
but once as links) or the profile has a curated note for exactly the value observed; anything else is flagged, so a
changed input never hides behind an old excuse.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from core.profile import Profile
from core.tables import delimited_text, markdown_table
from tasks.templates.load import TemplateRow

COMPARED = ("tm", "st", "nc", "templates_after", "samples")
LABEL_COLUMN = {"TM": "tm", "ST": "st", "NC": "nc"}


@dataclass(frozen=True)
class Difference:
    category: str
    column: str
    ours: int
    paper: int
    explained: bool
    note: str


@dataclass(frozen=True)
class CategoryRow:
    category: str
    display: str
    ours: dict[str, int]  # COMPARED columns
    paper: dict[str, int] | None  # COMPARED columns plus sr and templates_before
    bbq_links: dict[str, int]  # distinct BBQ templates linked, per label (ST/TM)


@dataclass(frozen=True)
class Table1:
    rows: list[CategoryRow]
    differences: list[Difference]
    paper_total_samples: int | None
    paper_reference: str = ""  # where the paper's numbers are published (the profile's [release] paper_reference)


def category_counts(templates: list[TemplateRow], samples_by_category: dict[str, int]) -> dict[str, dict[str, int]]:
    """Template IDs per label and in all (after the survey), and samples, per category."""
    ids: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for template in templates:
        ids[template.category][template.label].add(template.template_id)
    counts = {}
    for category in set(ids) | set(samples_by_category):
        by_label = ids.get(category, {})
        row = {column: len(by_label.get(label, ())) for label, column in LABEL_COLUMN.items()}
        row["templates_after"] = len(set().union(*by_label.values())) if by_label else 0
        row["samples"] = samples_by_category.get(category, 0)
        counts[category] = row
    return counts


def bbq_links(templates: list[TemplateRow]) -> tuple[dict[str, dict[str, int]],
                                                     dict[str, dict[tuple[str, str], list[int]]]]:
    """Per category: BBQ templates linked, per label; and the links more than one template ID uses (ST/TM only)."""
    by_label: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    users: dict[str, dict[tuple[str, str], set[int]]] = defaultdict(lambda: defaultdict(set))
    for template in templates:
        if template.bbq_id:
            by_label[template.category][template.label].add((template.bbq_category, template.bbq_id))
            users[template.category][(template.bbq_category, template.bbq_id)].add(template.template_id)
    return ({category: {label: len(links) for label, links in labels.items()}
             for category, labels in by_label.items()},
            {category: {link: sorted(ids) for link, ids in links.items() if len(ids) > 1}
             for category, links in users.items()})


def explain(category: str, column: str, ours: int, paper: int, links: dict[str, int],
            shared: dict[tuple[str, str], list[int]], profile: Profile) -> tuple[bool, str]:
    for note in profile.table1_notes:
        if (note.category, note.column, note.ours) == (category, column, ours):
            return note.explained, note.note
    label = {v: k for k, v in LABEL_COLUMN.items()}.get(column)
    extra_ids = sum(len(ids) - 1 for ids in shared.values())
    if shared and ((label and links.get(label, 0) == paper) or (column == "templates_after" and ours - extra_ids == paper)):
        pairs = "; ".join(f"template IDs {', '.join(map(str, ids))} all link to BBQ {cat} {qid}"
                          for (cat, qid), ids in sorted(shared.items()))
        return True, (f"{pairs}: the paper counts BBQ-linked templates once per BBQ template, which gives "
                      f"{paper}, as in the paper.")
    return False, "not explained by the inputs"


def build_table1(templates: list[TemplateRow], samples_by_category: dict[str, int], profile: Profile) -> Table1:
    counts = category_counts(templates, samples_by_category)
    links, shared = bbq_links(templates)
    rows, differences = [], []
    for category in profile.categories:
        ours = counts.get(category.name, {column: 0 for column in COMPARED})
        paper = category.paper.model_dump() if category.paper else None
        rows.append(CategoryRow(category.name, category.display, ours, paper, links.get(category.name, {})))
        if paper is None or not ours["templates_after"]:
            continue  # a build that leaves a category out (the example) is not compared on it
        for column in COMPARED:
            if paper[column] is not None and ours[column] != paper[column]:
                explained, note = explain(category.name, column, ours[column], paper[column],
                                          links.get(category.name, {}), shared.get(category.name, {}), profile)
                differences.append(Difference(category.name, column, ours[column], paper[column], explained, note))
    return Table1(rows, differences, profile.release.paper_total_samples, profile.release.paper_reference)


HEADERS = ["Category", "SR (paper)", "TM", "ST", "NC", "Templates", "Templates before survey (paper)", "Samples"]
PAPER_ONLY = {"SR (paper)": "sr", "Templates before survey (paper)": "templates_before"}
HEADER_COLUMN = {"TM": "tm", "ST": "st", "NC": "nc", "Templates": "templates_after", "Samples": "samples",
                 **PAPER_ONLY}


def reported(table: Table1) -> list[str]:
    """The headers of the columns the paper reports (EsBBQ: templates and samples only)."""
    return [h for h in HEADERS if h == "Category" or any(
        (row.paper or {}).get(HEADER_COLUMN[h]) is not None for row in table.rows)]


def _cell(row: CategoryRow, column: str, marks: dict[tuple[str, str], Difference]) -> str:
    ours = row.ours[column]
    difference = marks.get((row.category, column))
    if difference is None:
        return f"{ours:,}"
    return f"**{ours:,}** (paper {difference.paper:,}) {'†' if difference.explained else '‼'}"


def render_markdown(table: Table1, release_name: str, test_split: str = "") -> str:
    """The build's counts beside the paper's (if published), every difference marked and explained or not; and
    (``test_split``) which samples form the release's test split."""
    compared = table.paper_total_samples is not None or any(row.paper for row in table.rows)  # a new culture: none
    marks = {(d.category, d.column): d for d in table.differences}
    headers = reported(table) if compared else [h for h in HEADERS if h not in PAPER_ONLY]
    what = ("Templates after the survey by label, template IDs in all, and samples, per category. "
            if "TM" in headers else "Template IDs and samples per category (the columns the paper reports). ")
    if compared:
        title = "Table 1 comparison"
        what += ("A value that differs from the paper is bold with the paper's value; † explained (see the notes), "
                 "‼ not explained by the inputs." + (f" The paper's numbers: {table.paper_reference}."
                                                    if table.paper_reference else ""))
    else:
        title = "Table 1"
        what += "The profile gives no published numbers (no `paper` counts), so there is nothing to compare with."
    rows: list[list[str]] = []
    totals: Counter = Counter()
    for row in table.rows:
        paper = {k: v for k, v in (row.paper or {}).items() if v is not None}
        cells = {"Category": row.display if row.ours["templates_after"] else f"{row.display} (not in this build)",
                 **{h: str(paper.get(c, "")) for h, c in PAPER_ONLY.items()},
                 **{h: _cell(row, c, marks) for h, c in HEADER_COLUMN.items() if h not in PAPER_ONLY}}
        rows.append([cells[h] for h in headers])
        totals.update(row.ours)
        totals.update({f"paper_{k}": v for k, v in paper.items()})
    total_cells = {"Category": "**Total**", **{h: str(totals[f"paper_{c}"]) for h, c in PAPER_ONLY.items()},
                   **{h: f"{totals[c]:,}" + (f" (paper {totals['paper_' + c]:,})" if compared else "")
                      for h, c in HEADER_COLUMN.items() if h not in PAPER_ONLY}}
    if compared:
        total_cells["Samples"] = f"{totals['samples']:,} (paper {table.paper_total_samples or 0:,})"
    rows.append([total_cells[h] for h in headers])
    lines = [f"# {release_name}: {title}", "", what, "", *markdown_table(headers, rows), "", "## Differences", ""]
    if not compared:
        lines.append("None to report: no published numbers to compare with.")
    elif not table.differences:
        lines.append("None: every compared count equals the paper.")
    for d in table.differences:
        status = "explained" if d.explained else "NOT EXPLAINED"
        lines.append(f"- {d.category} / {d.column}: {d.ours:,} vs paper {d.paper:,} "
                     f"({d.ours - d.paper:+,}); {status}: {d.note}")
    return "\n".join(lines) + "\n" + (f"\n## Test split\n\n{test_split}\n" if test_split else "")


CSV_COLUMNS = ["category", "column", "ours", "paper", "difference", "explained", "note"]


def csv_rows(table: Table1) -> list[dict[str, str]]:
    """``table1.csv``'s rows, as text: what the audit report and the run's artifacts show of Table 1."""
    rows = []
    marks = {(d.category, d.column): d for d in table.differences}
    for row in table.rows:
        compared = row.paper is not None and row.ours["templates_after"] > 0
        for column in COMPARED:
            paper = (row.paper or {}).get(column)
            if compared and paper is None:
                continue  # the paper does not report this column
            difference = marks.get((row.category, column))
            note = difference.note if difference else ("" if compared else "no published number: not compared"
                                                       if row.paper is None else "not in this build: not compared")
            values = [row.category, column, row.ours[column], "" if paper is None else paper,
                      row.ours[column] - paper if compared else "",
                      "" if difference is None else str(difference.explained).lower(), note]
            rows.append(dict(zip(CSV_COLUMNS, map(str, values))))
    return rows


def render_csv(table: Table1) -> str:
    return delimited_text(CSV_COLUMNS, [[row[c] for c in CSV_COLUMNS] for row in csv_rows(table)])
