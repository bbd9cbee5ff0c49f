"""The survey stage: the survey results through the paper's rules, once per build. ``survey_stage`` is its one
function for every entry point (``run`` below and ``kobbq survey ingest``): the decisions the release reads survivors
from, the reports, the results in the released aggregated format and the quota shortfalls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.atomic import write_bytes, write_text
from core.decisions import OUTCOME_DROP, Decision, portable_text, template_subject, write_decisions_parquet
from core.profile import Profile
from core.stage_contract import Context, StageOutput, Waiting, require
from core.tables import delimited_text, write_csv_rows
from tasks.templates.stage_templates import checked_templates
from tasks.survey.apply import SurveyOutcome, apply_survey_rules
from tasks.survey.funnel import RULE_EFFECT_COLUMNS, render_funnel, render_group_check, rule_effects
from tasks.survey.inputs import SurveyInputs, pipeline_inputs
from tasks.survey.results import NO_STEREO, SurveyResults
from tasks.survey.rule_table import TEMPLATE, rules_of
from tasks.templates.load import TemplateRow

NAME = "survey"
FUNNEL = "funnel.md"
GROUP_CHECK = "survey_agreement.md"  # the group check's file keeps its first name
QUOTA_COLUMNS = ["question_id", "what", "expected", "actual"]
RESULTS = "survey_results.json"
QUOTA = "quota_shortfalls.csv"
VOTES = "survey_votes.csv"
VOTE_COLUMNS = ["question_id", "category", "stereotype", "survey_type", "respondents", "no_stereotype", "group",
                "votes"]


@dataclass(frozen=True)
class SurveyStage:
    outcome: SurveyOutcome
    reports: dict[str, str]  # file name in the release folder -> text

    @property
    def kept(self) -> list[TemplateRow]:
        return self.outcome.kept

    @property
    def decisions(self) -> list[Decision]:
        return self.outcome.decisions


def survey_stage(templates: list[TemplateRow], inputs: SurveyInputs, profile: Profile) -> SurveyStage:
    """Read the survey inputs, run the rules on ``templates``, render the reports (nothing is written). The reports name
    input files by their names only: a path in them would make two checkouts' releases differ."""
    outcome = apply_survey_rules(templates, inputs.read(profile), profile, allow_unmatched=inputs.allow_unmatched)
    reports = {FUNNEL: render_funnel(outcome), GROUP_CHECK: render_group_check(outcome), VOTES: render_votes(outcome)}
    return SurveyStage(outcome, {name: portable_text(text) for name, text in reports.items()})


def render_votes(outcome: SurveyOutcome) -> str:
    """``survey_votes.csv``: one row per (question with a result, group), for the audit report's charts: a type-1 rule
    looks at every group's votes, which the decision log does not list."""
    rows: list[list[object]] = []
    for evaluation in outcome.stereotypes:
        result, stereotype = evaluation.result, evaluation.stereotype
        if result is None:
            continue
        rows += [[stereotype.question_id, stereotype.category, stereotype.text, stereotype.survey_type,
                  result.respondents, result.no_stereotype, group, votes] for group, votes in result.votes.items()]
    return delimited_text(VOTE_COLUMNS, rows)


def survivors(templates: list[TemplateRow], decisions: list[Decision]) -> list[TemplateRow]:
    """The templates the survey stage's decisions keep (a logged ``drop`` of the stereotype-survey or reading rule
    drops one): the release reads the decisions instead of running the rules again."""
    deciding = {rule.name for rule in rules_of(TEMPLATE) if rule.decides}  # a template survives when none says drop
    dropped = {d.subject for d in decisions
               if d.subject_type == "template" and d.rule in deciding and d.outcome == OUTCOME_DROP}
    return [t for t in templates if template_subject(*t.template_key) not in dropped]


def released_format(results: SurveyResults) -> bytes:
    """Aggregated results in the released JSON format (respondent-level input aggregated to it)."""
    entries = [{"category": e.category, "stereotype": e.stereotype,
                "survey_stats": {**e.votes, NO_STEREO: e.no_stereotype}} for e in results.entries]
    entries.sort(key=lambda e: (e["category"], e["stereotype"], sorted(e["survey_stats"])))
    return (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_results(results: SurveyResults, folder: Path) -> dict[str, Path]:
    """``survey_results.json`` (in the released format) and ``quota_shortfalls.csv``, by their roles."""
    quota = [[q.question_id, q.what, str(q.expected), str(q.actual)] for q in results.quota]
    return {"results": write_bytes(folder / RESULTS, released_format(results)),
            "quota": write_csv_rows(folder / QUOTA, QUOTA_COLUMNS, quota)}


# --- the stage in a pipeline -------------------------------------------------------------------

def outcome(ctx: Context) -> SurveyStage:
    """The survey stage's outcome on the pipeline's template file, computed once (by ``prepare`` when it can)."""

    def compute() -> SurveyStage:
        files = pipeline_inputs(ctx)
        questionnaire = ctx.output("survey-export", "questionnaire")
        templates_path = ctx.templates_file()
        require(files.results, "survey results",
                f"Send {questionnaire} (written again by `kobbq survey export --profile {ctx.profile.argument} "
                f"--templates {templates_path} --out FOLDER`) to the survey company and put the results "
                "(respondent-level CSV/xlsx, or the aggregated JSON) where survey.results points.")
        assert templates_path is not None
        return survey_stage(checked_templates(ctx, templates_path)[0].templates, files, ctx.profile)

    return ctx.once(("survey-outcome",), compute)


def survey_decisions(ctx: Context) -> list[Decision]:
    """The survey's decisions: its outcome's when it is about to run in this process, else the recorded ones."""
    return outcome(ctx).decisions if NAME in ctx.pending else ctx.decisions(NAME)


def prepare(ctx: Context) -> None:
    """Run the rules before the flow run (a bad survey file stops in one line before Prefect starts), unless an earlier
    stage of this run is about to write the templates or the questions it reads."""
    if ctx.profile.survey.enabled and not ctx.pending & {"templates", "survey-export"}:
        try:
            outcome(ctx)
        except Waiting:
            pass  # the results are not there yet: the run says so when it reaches this stage


def run(ctx: Context) -> StageOutput:
    if not ctx.profile.survey.enabled:
        return StageOutput({}, {}, [], f"profile {ctx.profile.name}: no survey; every template goes on")
    stage = outcome(ctx)
    folder = ctx.stage_dir(NAME)
    reports = {**{f"report:{name}": write_text(folder / name, text) for name, text in stage.reports.items()},
               **write_results(stage.outcome.results, folder)}  # the role "report:..." copies it into the release
    write_decisions_parquet(stage.decisions, ctx.decisions_file(NAME, "survey").with_suffix(".parquet"))
    rows = checked_templates(ctx, ctx.templates_file())[0].templates  # type: ignore[arg-type]  (read once, by outcome)
    ids, kept = len({t.template_key for t in rows}), len({t.template_key for t in stage.kept})
    funnel = [dict(zip(RULE_EFFECT_COLUMNS, row)) for row in rule_effects(stage.outcome)]
    result = stage.outcome
    counts = {"template_ids": ids, "kept": kept, "kept_rows": len(stage.kept), "stereotypes": len(result.stereotypes),
              "stereotypes_kept": sum(e.keep() for e in result.stereotypes), "unmatched_results": len(result.unmatched),
              "quota_shortfalls": len(result.results.quota)}
    return StageOutput(counts, reports, stage.decisions, f"{kept} of {ids} template IDs pass the survey filters",
                       {"funnel": funnel})
