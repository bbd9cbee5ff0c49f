"""The survey-export stage: the questionnaires for the survey company (an xlsx workbook and the same tables as CSV, with
``questions.csv``, which the survey stage reads respondent-level results with). Wording lives in the profile's survey
folder (jinja2 files, ``options.toml``), not in code; type 2 shows its two groups in an order seeded per question, so
that adding questions changes no other question's order."""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from pathlib import Path

import jinja2

from core.atomic import write_bytes
from core.decisions import Decision, write_decisions_parquet
from core.errors import UserError
from core.profile import Profile, load_survey_options
from core.stage_contract import Context, StageOutput
from core.tables import csv_for_people
from core.workbooks import reproducible_bytes, table_workbook
from tasks.survey.stereotypes import (GroupList, Stereotype, collect_stereotypes, norm, profile_group_lists,
                                      type1_group_list, type_decision)
from tasks.survey.inputs import QUESTION_COLUMNS, READING_QUESTION_COLUMNS
from tasks.survey.results import OPTION_SEPARATOR
from tasks.templates.kobbq_format import expand_templates
from tasks.templates.load import TemplateRow
from tasks.templates.stage_templates import checked_templates

NAME = "survey-export"


def export_questionnaires(templates: list[TemplateRow], profile: Profile, out: Path
                          ) -> tuple[dict[str, int], dict[str, Path], list[Decision]]:
    """The questionnaires written to ``out``: their counts, files and the survey-type decision of each question."""
    stereotypes, _ = collect_stereotypes(templates, profile)  # raises on a template error
    lists = profile_group_lists(profile)
    wording = load_wording(profile)
    questions = build_questions(stereotypes, lists, profile, wording)
    reading = build_reading(templates, profile, wording)
    outputs = write_export(out, questions, reading, group_rows(lists, profile))
    decisions = [type_decision(NAME, s, {"question_id": s.question_id, "groups": list(s.groups)}) for s in stereotypes]
    type1 = sum(q["survey_type"] == "1" for q in questions)
    counts = {"questions": len(questions), "type1": type1, "type2": len(questions) - type1,
              "reading_questions": len(reading)}
    return counts, outputs, decisions


QUESTION_EXPORT_COLUMNS = QUESTION_COLUMNS + ["text", "templates"]
READING_EXPORT_COLUMNS = READING_QUESTION_COLUMNS + ["version", "text"]
DIS_CNT_OFFSET = 3  # position of the counter-biased disambiguated sample among a fill's four
GROUP_EXPORT_COLUMNS = ["category", "group", "world_region", "counted"]


@dataclass(frozen=True)
class Wording:
    type1: jinja2.Template
    type2: jinja2.Template
    reading: jinja2.Template
    no_stereotype: str


def load_wording(profile: Profile) -> Wording:
    folder = profile.file("survey")
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                                     keep_trailing_newline=False, autoescape=False)
    try:
        templates = [environment.get_template(f"{name}.j2") for name in ("type1", "type2", "reading")]
    except jinja2.TemplateNotFound as exc:
        raise UserError(f"questionnaire template {exc.name} is missing", folder) from None
    options = folder / "options.toml"
    if not options.exists():
        raise UserError("options.toml (the 'no stereotype' option label) is missing", folder)
    return Wording(*templates, load_survey_options(options).no_stereotype)


def type2_order(stereotype: Stereotype, seed: int) -> tuple[str, ...]:
    """The two groups in a random order seeded by the profile seed and the question ID."""
    groups = list(stereotype.groups)
    random.Random(f"{seed}:{stereotype.question_id}").shuffle(groups)
    return tuple(groups)


def build_questions(stereotypes: list[Stereotype], lists: dict[str, GroupList], profile: Profile,
                    wording: Wording) -> list[dict[str, str]]:
    """One questionnaire row per question (``QUESTION_EXPORT_COLUMNS``), by category, type and stereotype."""
    rows, seen = [], {}
    for stereotype in stereotypes:
        type1 = stereotype.survey_type == 1
        options = (type1_group_list(stereotype.category, stereotype.text, lists, profile).groups if type1
                   else type2_order(stereotype, profile.survey.seed))
        text = (wording.type1 if type1 else wording.type2).render(stereotype=stereotype.text, groups=options)
        qid = stereotype.question_id
        if qid in seen:
            raise UserError(f"two questions share the ID {qid}: '{seen[qid]}' and '{stereotype.label}'")
        seen[qid] = stereotype.label
        rows.append({"question_id": qid, "category": stereotype.category, "stereotype": stereotype.text,
                     "survey_type": str(stereotype.survey_type), "options": OPTION_SEPARATOR.join(options),
                     "no_stereotype_option": wording.no_stereotype, "text": text.strip(),
                     "templates": " ".join(f"{c}|{i}" for c, i in stereotype.templates)})
    return sorted(rows, key=lambda r: (r["category"], r["survey_type"], r["stereotype"], r["question_id"]))


def build_reading(templates: list[TemplateRow], profile: Profile, wording: Wording) -> list[dict[str, str]]:
    """One reading question per template ID: the counter-biased disambiguated sample of its first counter-biased
    version, fill 001, as the expansion engine makes it (options: its ``choices``, key: its ``answer``), so that
    respondents see exactly the release's text and choices."""
    chosen: dict[tuple[str, int], TemplateRow] = {}
    for template in templates:
        if template.version in profile.templates.counter_biased_versions:
            current = chosen.get(template.template_key)
            if current is None or template.version < current.version:
                chosen[template.template_key] = template
    keys = sorted(chosen)
    rows_to_expand = [chosen[key] for key in keys]
    columns = expand_templates(rows_to_expand, profile)
    rows = []
    for key, template, start in zip(keys, rows_to_expand, columns.row_starts):
        sample = start + DIS_CNT_OFFSET  # fill 001's four samples: amb-bsd, amb-cnt, dis-bsd, dis-cnt
        options = [norm(o) for o in ast.literal_eval(columns.columns["choices"][sample])]
        for option, column in zip(options, ("biased_answer", "counter_biased_answer")):
            if OPTION_SEPARATOR in option:
                raise UserError(f"reading-comprehension option {option!r} contains the option separator "
                                f"{OPTION_SEPARATOR!r}", template.where(column))
        rows.append({"question_id": f"{key[0]}-rc-{key[1]:03d}", "category": key[0], "template_id": str(key[1]),
                     "correct_answer": norm(columns.columns["answer"][sample]), "version": template.version,
                     "text": wording.reading.render(context=columns.columns["context"][sample],
                                                    question=columns.columns["question"][sample]).strip(),
                     "options": OPTION_SEPARATOR.join(options)})
    return rows


def group_rows(lists: dict[str, GroupList], profile: Profile) -> list[dict[str, str]]:
    return [{"category": category, "group": group, "world_region": lists[category].world_region.get(group, ""),
             "counted": "no" if lists[category].world_region.get(group) else "yes"}
            for category in profile.category_names if category in lists for group in lists[category].groups]


def xlsx_bytes(sheets: list[tuple[str, list[str], list[dict[str, str]]]]) -> bytes:
    """Every cell is text (a stereotype starting with '=' must not become a formula)."""
    tables = {title: [columns, *([row.get(name, "") for name in columns] for row in rows)]
              for title, columns, rows in sheets}
    return reproducible_bytes(table_workbook(tables))


def write_export(out: Path, question_rows: list[dict[str, str]], reading: list[dict[str, str]],
                 groups: list[dict[str, str]]) -> dict[str, Path]:
    """Write questions.csv, reading_questions.csv, groups.csv and questionnaire.xlsx (each atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "questions": (out / "questions.csv", csv_for_people(QUESTION_EXPORT_COLUMNS, question_rows)),
        "reading": (out / "reading_questions.csv", csv_for_people(READING_EXPORT_COLUMNS, reading)),
        "groups": (out / "groups.csv", csv_for_people(GROUP_EXPORT_COLUMNS, groups)),
        "workbook": (out / "questionnaire.xlsx", xlsx_bytes([
            ("questions", QUESTION_EXPORT_COLUMNS, question_rows),
            ("reading", READING_EXPORT_COLUMNS, reading),
            ("groups", GROUP_EXPORT_COLUMNS, groups)])),
    }
    for path, data in files.values():
        write_bytes(path, data)
    return {name: path for name, (path, _) in files.items()}


def prepare(ctx: Context) -> None:
    """Collect the stereotypes before the flow run (a template without its question's groups stops before Prefect
    starts), unless the templates stage is about to write the file."""
    path = ctx.templates_file()
    if ctx.profile.survey.enabled and "templates" not in ctx.pending and path is not None and path.exists():
        collect_stereotypes(checked_templates(ctx, path)[0].templates, ctx.profile)


def run(ctx: Context) -> StageOutput:
    if not ctx.profile.survey.enabled:
        return StageOutput({}, {}, [], f"profile {ctx.profile.name}: no survey; nothing to send out")
    templates = checked_templates(ctx, ctx.templates_file())[0].templates  # type: ignore[arg-type]
    folder = ctx.stage_dir(NAME)
    counts, files, decisions = export_questionnaires(templates, ctx.profile, folder)
    write_decisions_parquet(decisions, ctx.decisions_file(NAME, "survey").with_suffix(".parquet"))
    return StageOutput(counts, {"questionnaire": files["workbook"], "questions": files["questions"]}, decisions,
                       f"questionnaires for {counts['questions']} questions ({counts['type1']} type 1, "
                       f"{counts['type2']} type 2) and {counts['reading_questions']} reading-comprehension questions "
                       f"written to {folder}")
