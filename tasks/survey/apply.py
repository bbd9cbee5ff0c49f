"""Run the survey rules on candidate templates: ``apply_survey_rules``, the one entry point.

Steps: every question (unique stereotype) judged by its rules (``tasks.survey.evaluate_stereotypes``),
the results no question asks about recorded, then every template's fate
(``tasks.survey.evaluate_templates``); curated overrides are handed to the subjects they name, and one
nobody claimed is an error. Results no candidate template asks about are bad input unless allowed.
"""

from __future__ import annotations

from core.errors import UserError
from core.profile import Profile
from tasks.survey.evaluate_stereotypes import evaluate_stereotypes, unmatched_decision, unmatched_results
from tasks.survey.evaluate_templates import evaluate_template, rows_by_template
from tasks.survey.groups import profile_group_lists
from tasks.survey.inputs import SurveyData
from tasks.survey.outcome import SurveyOutcome, TemplateEvaluation
from tasks.survey.overrides import OverrideIndex
from tasks.survey.stereotypes import collect_stereotypes
from tasks.templates.load import TemplateRow


def apply_survey_rules(templates: list[TemplateRow], data: SurveyData, profile: Profile,
                       allow_unmatched: bool = False) -> SurveyOutcome:
    """The paper's rules and the overrides on the candidate templates: kept templates (input order),
    decisions and the report data.

    Decisions are logged in a fixed order: every question's, then the results no template asks
    about, then every template's (input order). Results no template asks about are always recorded,
    and refused unless ``allow_unmatched`` (a released template file holds only the survivors).
    """
    results, reading, overrides = data.results, data.reading, data.overrides
    lists = profile_group_lists(profile)
    stereotypes, findings = collect_stereotypes(templates, profile)
    override_index = OverrideIndex.of(overrides)
    evaluations, decisions = evaluate_stereotypes(stereotypes, results, lists, profile, override_index)
    unmatched = unmatched_results(results, evaluations)
    decisions.extend(unmatched_decision(entry) for entry in unmatched)

    template_evaluations: list[TemplateEvaluation] = []
    for key, rows in rows_by_template(templates).items():
        evaluation, template_decisions = evaluate_template(key, rows, evaluations, override_index.for_template(key),
                                                           reading, profile)
        template_evaluations.append(evaluation)
        decisions.extend(template_decisions)
    override_index.check_all_claimed(overrides)

    keep_ids = {t.key for t in template_evaluations if t.keep}
    kept = [t for t in templates if t.template_key in keep_ids]
    outcome = SurveyOutcome(kept, decisions, tuple(evaluations), tuple(template_evaluations), unmatched,
                            tuple(findings), results.notes, tuple(templates), profile, results, reading,
                            survivors_only=allow_unmatched)
    check_unmatched(outcome, allow_unmatched)
    return outcome


def check_unmatched(outcome: SurveyOutcome, allow_unmatched: bool) -> None:
    """A result no candidate template asks about is bad input, unless the templates are survivors only."""
    if outcome.unmatched and not allow_unmatched:
        first = outcome.unmatched[0]
        raise UserError(f"{len(outcome.unmatched)} survey result(s) match no template's question; first: "
                        f"{first.category} '{first.stereotype}' ({first.as_stats()}). If the templates are "
                        "survivors only (e.g. a released template file), allow them (`--allow-unmatched` on the "
                        "command line, `allow_unmatched = true` in a pipeline file's [survey] section)", first.where)
