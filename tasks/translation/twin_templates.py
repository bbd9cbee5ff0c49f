"""The machine-translated twin's templates (``mtBBQ_templates.tsv``): the unedited DeepL drafts as templates.

The paper compares its benchmark with BBQ machine-translated: the same templates, with no post-edit and no
cultural adaptation. The twin's rows are the drafts of the ST and TM templates, numbered as the post-edit
workbooks number them, and expanded at the release for the templates the release keeps (``mtBBQ_*``).

Version roles come from BBQ's own answer info, as the post-edit's come from its groups: a row is *biased*
when the answer to its negative question names the person whose ``NAME1_info``/``NAME2_info`` is one of
the row's ``Known_stereotyped_groups``. BBQ's letters do not follow the convention (its version a is the
biased one in some templates), so where BBQ's version a is the biased one the twin exchanges the two
versions' letters, and every twin row carries BBQ's groups (``N1_info``, ``N2_info``, ``Target_group``),
so that the version check runs on the twin as on the release. A TM template's twin keeps BBQ's target (the
machine translation adapts nothing): its groups say so. A template whose roles BBQ's info cannot tell (no
Names or no info, as in BBQ's categories filled from its vocabulary), or whose draft does not make a
valid template (a lost placeholder), is left out of the twin; each template's fate is a decision.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from core.decisions import Decision, template_subject
from core.errors import Location
from core.profile import Profile
from tasks.templates.bbq import BBQTemplate
from tasks.templates.slots import PERSON_SLOTS, find_inline_slots
from tasks.templates.versions import BIASED, COUNTER_BIASED, partner_version
from tasks.translation.glossary import EMPTY_GLOSSARY
from tasks.translation.postedit import ImportResult, import_cells
from tasks.translation.pretranslate import Draft
from tasks.translation.workbook import EditedCell, ExportRow, export_rows

STAGE = "pretranslate"
TWIN = "mtBBQ"  # the twin's release name and file prefix
MT_TEMPLATES = f"{TWIN}_templates.tsv"
_NOT_WORD = re.compile(r"[\s_\-]+")


def _plain(group: str) -> str:
    """BBQ writes a group two ways ("low SES" in Known_stereotyped_groups, "lowSES" in NAME1_info)."""
    return _NOT_WORD.sub("", group).lower()


def stereotyped_groups(cell: str) -> list[str]:
    """BBQ's ``Known_stereotyped_groups``: a JSON list (``["old"]``), else comma-separated words."""
    try:
        value = json.loads(cell)
    except ValueError:
        value = None
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip(" []\"'") for part in cell.split(",") if part.strip(" []\"'")]


@dataclass(frozen=True)
class Groups:
    """A twin row's groups, in BBQ's own words: who N1 and N2 are, and which of them the stereotype targets."""

    n1: str
    n2: str
    target: str

    def columns(self) -> dict[str, str]:
        return {"N1_info": self.n1, "N2_info": self.n2, "Target_group": self.target}


def bbq_groups(template: BBQTemplate) -> Groups | None:
    """The row's groups from BBQ's own info; None when BBQ does not tell them (no info, or both or neither
    person of a stereotyped group)."""
    n1, n2 = template.columns.get("NAME1_info", "").strip(), template.columns.get("NAME2_info", "").strip()
    targets = {_plain(g) for g in stereotyped_groups(template.known_stereotyped_groups)}
    if not n1 or not n2 or (_plain(n1) in targets) == (_plain(n2) in targets):
        return None
    return Groups(n1, n2, n1 if _plain(n1) in targets else n2)


def row_role(biased_answer: str, groups: Groups) -> str | None:
    """``biased`` when the answer to the negative question names the target person, else ``counter-biased``."""
    people = {slot.name for slot in find_inline_slots(biased_answer) if slot.name in PERSON_SLOTS}
    if len(people) != 1:
        return None
    info = {"N1": groups.n1, "N2": groups.n2}[people.pop()]
    return BIASED if info == groups.target else COUNTER_BIASED


@dataclass(frozen=True)
class TwinTemplate:
    """One template's twin: its rows by version (export rows), BBQ's groups per version, and its fate."""

    category: str
    template_id: int
    bbq: str
    label: str
    rows: dict[str, list[ExportRow]]
    groups: dict[str, Groups | None]

    @property
    def subject(self) -> str:
        return template_subject(self.category, self.template_id)

    def roles(self) -> dict[str, str | None]:
        answers = {version: next(r.english for r in rows if r.field == "Biased_question_answer")
                   for version, rows in self.rows.items()}
        return {version: row_role(answers[version], self.groups[version]) if self.groups[version] else None
                for version in self.rows}


def grouped_rows(drafts: list[Draft], rows: list[ExportRow]) -> list[TwinTemplate]:
    """The export rows by template, each version with the groups of the BBQ row it came from (a version the export
    generated by swapping N1 and N2 in the texts keeps its row's Names, and so its groups)."""
    bbq_rows: dict[tuple[str, str], list[BBQTemplate]] = defaultdict(list)
    for draft in drafts:
        bbq_rows[(draft.template.category, draft.template.q_id)].append(draft.template)
    by_template: dict[tuple[str, int], dict[str, list[ExportRow]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_template[(row.category, row.template_id)][row.version].append(row)
    found = []
    for (category, template_id), versions in by_template.items():
        first = next(iter(versions.values()))[0]
        sources = bbq_rows[(first.bbq_category, first.bbq_id)]
        groups = {}
        for position, version in enumerate(versions):
            source = next((t for t in sources if t.version == version), None)
            if source is None:  # BBQ has no version letters: rows in file order, then the generated swap
                source = sources[min(position, len(sources) - 1)]
            groups[version] = bbq_groups(source)
        found.append(TwinTemplate(category, template_id, f"bbq:{first.bbq_category}:{first.bbq_id}", first.label,
                                  dict(versions), groups))
    return found


def version_plan(template: TwinTemplate, profile: Profile) -> tuple[dict[str, str] | None, str]:
    """Each BBQ version's letter in the twin (a version whose role is the other's exchanges letters with its
    partner), and why; None when BBQ's info cannot tell the roles."""
    roles = template.roles()
    unknown = sorted(v for v, role in roles.items() if role is None)
    if unknown:
        return None, (f"BBQ's answer info cannot tell the role of version(s) {', '.join(unknown)} (NAME1_info, "
                      "NAME2_info and Known_stereotyped_groups must name exactly one person of a stereotyped group)")
    counter = profile.templates.counter_biased_versions
    letters = {}
    for version, role in roles.items():
        expected = COUNTER_BIASED if version in counter else BIASED
        letters[version] = version if role == expected else partner_version(version, profile)
    if sorted(letters.values()) != sorted(letters):
        return None, f"BBQ's versions play roles {roles} that no exchange of letters puts in the convention"
    parts = "; ".join(f"BBQ {v} is {roles[v]}" + (f" -> twin {letters[v]}" if letters[v] != v else "")
                      for v in roles)
    return letters, parts


def machine_rows(drafts: list[Draft], profile: Profile, labels: Mapping[str, str]
                 ) -> tuple[list[ExportRow], dict[str, dict[str, str]], list[Decision], list[TwinTemplate]]:
    """The twin's rows (versions in the convention), their groups by row key, a decision per template, and the
    templates kept."""
    rows, groups, decisions, kept = [], {}, [], []
    for template in grouped_rows(drafts, export_rows(drafts, profile, labels)):
        letters, reason = version_plan(template, profile)
        target = next((g.target for g in template.groups.values() if g), "")
        numbers = {"bbq": template.bbq, "label": template.label, "target": target}
        if letters is None:
            decisions.append(Decision(STAGE, "template", template.subject, "mt-twin", "left out",
                                      f"not in the machine-translated twin: {reason}", numbers, source=template.bbq))
            continue
        exchanged = any(letter != version for version, letter in letters.items())
        kept.append(template)
        for version, version_rows in template.rows.items():
            rows += [replace(row, version=letters[version]) for row in version_rows]
            groups[f"{template.category}|{template.template_id}|{letters[version]}"] = \
                template.groups[version].columns()  # type: ignore[union-attr]
        tm = (f"; as a {template.label} template its twin keeps BBQ's target {target!r}, which the machine translation "
              "does not adapt") if template.label in ("TM", "m") else ""
        decisions.append(Decision(STAGE, "template", template.subject, "mt-twin",
                                  "versions exchanged" if exchanged else "kept",
                                  f"in the machine-translated twin, roles by BBQ's answer info: {reason}{tm}",
                                  {**numbers, "exchanged": exchanged}, source=template.bbq))
    return rows, groups, decisions, kept


def write_machine_translation(drafts: list[Draft], profile: Profile, labels: Mapping[str, str],
                              out_path: Path) -> ImportResult:
    """``mtBBQ_templates.tsv``: the twin's rows checked like a post-edit (the version convention included, on
    BBQ's groups). A template whose draft fails a check is left out (a decision says why) and the rest is
    checked again; the file is written once nothing fails."""
    rows, groups, decisions, _ = machine_rows(drafts, profile, labels)
    if not rows:
        return ImportResult([], None, decisions, [])
    while True:
        cells = [EditedCell(row.category, row, row.draft, "", Location("DeepL draft", index + 1, row.field))
                 for index, row in enumerate(rows)]
        result = import_cells(cells, Path(out_path), profile, EMPTY_GLOSSARY, use_draft=True, groups=groups)
        failed = {(cells[f.where.row - 1].category, cells[f.where.row - 1].row.template_id): f
                  for f in result.errors if f.where.file == "DeepL draft" and f.where.row}
        if not failed:
            break
        for (category, template_id), finding in sorted(failed.items()):
            first = next(r for r in rows if (r.category, r.template_id) == (category, template_id))
            decisions = [d for d in decisions if d.subject != template_subject(category, template_id)]
            decisions.append(Decision(STAGE, "template", template_subject(category, template_id), "mt-twin",
                                      "left out", f"not in the machine-translated twin: its draft fails a check "
                                      f"({finding.code}: {finding.message})",
                                      {"bbq": f"bbq:{first.bbq_category}:{first.bbq_id}", "label": first.label},
                                      source=f"bbq:{first.bbq_category}:{first.bbq_id}"))
        rows = [r for r in rows if (r.category, r.template_id) not in failed]
        if not rows:
            return ImportResult([], None, decisions, result.findings)
    return replace(result, decisions=result.decisions + decisions)
