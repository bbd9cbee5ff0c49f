"""Respondent-level survey results: the survey company's rows checked, counted into votes, quota-checked.

One row per respondent x question with the columns ``question_id, respondent_id, gender, age_band,
answer``; ``answer`` holds the chosen option labels separated by ``;`` (one for type 2), the "no
stereotype" label written in the questionnaire, or ``no_stereo``. The question definitions come
from the exported questionnaire (``questions.csv`` written by ``kobbq survey export``). Rows are
checked against the quota (respondents per question, balanced by gender and age band) and counted
into the same ``SurveyResult`` entries as the released JSON. A CSV or the first sheet of an xlsx.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.tables import at_column, read_table
from tasks.survey.groups import norm, profile_group_lists
from tasks.survey.results import (NO_STEREO, OPTION_SEPARATOR, QuotaShortfall, SurveyResult, SurveyResults,
                                  check_votes, merge_duplicates, new_question_id)

RESPONDENT_COLUMNS = ["question_id", "respondent_id", "gender", "age_band", "answer"]
QUESTION_COLUMNS = ["question_id", "category", "stereotype", "survey_type", "options", "no_stereotype_option"]


@dataclass(frozen=True)
class Question:
    question_id: str
    category: str
    stereotype: str
    survey_type: int
    options: tuple[str, ...]  # groups in the order shown (type 2: the seeded order)
    no_stereotype_label: str


def load_questions(path: Path) -> dict[str, Question]:
    """The questionnaire as exported (``questions.csv``): what each question asked and offered."""
    rows, where = read_table(path, QUESTION_COLUMNS)
    questions: dict[str, Question] = {}
    for row, at in zip(rows, where):
        qid = new_question_id(row, at, questions)
        if row["survey_type"] not in ("1", "2"):
            raise UserError(f"survey_type must be 1 or 2, got {row['survey_type']!r}", at_column(at, "survey_type"))
        options = tuple(norm(o) for o in row["options"].split(OPTION_SEPARATOR) if o.strip())
        questions[qid] = Question(qid, row["category"], norm(row["stereotype"]), int(row["survey_type"]), options,
                                  norm(row["no_stereotype_option"]))
    return questions


@dataclass
class _Answers:
    """Respondent rows grouped by question: each respondent's choices and (gender, age band)."""

    choices: dict[str, dict[str, tuple[str, ...]]]
    people: dict[str, dict[str, tuple[str, str]]]
    first_row: dict[str, Location]


def _choices(row: dict[str, str], question: Question, at: Location) -> tuple[str, ...]:
    """One respondent's answer to one question, as option labels (``no_stereo`` for "no stereotype")."""
    chosen = tuple(norm(a) for a in row["answer"].split(OPTION_SEPARATOR) if a.strip())
    chosen = tuple(NO_STEREO if c == question.no_stereotype_label else c for c in chosen)
    if not chosen:
        raise UserError("empty answer", at_column(at, "answer"))
    unknown = [c for c in chosen if c != NO_STEREO and c not in question.options]
    if unknown:
        raise UserError(f"answer {', '.join(map(repr, unknown))} is not an option of question "
                        f"{question.question_id}", at_column(at, "answer"))
    if NO_STEREO in chosen and len(chosen) > 1:
        raise UserError("'no stereotype' cannot be chosen together with a group", at_column(at, "answer"))
    if question.survey_type == 2 and len(chosen) > 1:
        raise UserError("a type-2 question takes one answer", at_column(at, "answer"))
    if len(set(chosen)) != len(chosen):
        raise UserError("the same option is chosen twice", at_column(at, "answer"))
    return chosen


def _read_answers(path: Path, questions: dict[str, Question], questions_path: Path, profile: Profile) -> _Answers:
    """Every respondent row checked (known question, respondent, gender, age band, answer; once per question)."""
    rows, where = read_table(path, RESPONDENT_COLUMNS)
    genders, bands = profile.survey.quota_genders, profile.survey.quota_age_bands
    answers = _Answers({}, {}, {})
    for row, at in zip(rows, where):
        qid, person = row["question_id"], row["respondent_id"]
        question = questions.get(qid)
        if question is None:
            raise UserError(f"unknown question ID {qid!r} (not in {questions_path.name})", at_column(at, "question_id"))
        if not person:
            raise UserError("empty respondent_id", at_column(at, "respondent_id"))
        if genders and row["gender"] not in genders:
            raise UserError(f"gender {row['gender']!r} is not one of {', '.join(genders)}", at_column(at, "gender"))
        if bands and row["age_band"] not in bands:
            raise UserError(f"age band {row['age_band']!r} is not one of {', '.join(bands)}",
                            at_column(at, "age_band"))
        if person in answers.choices.setdefault(qid, {}):
            raise UserError(f"respondent {person!r} answered question {qid!r} twice", at_column(at, "respondent_id"))
        answers.choices[qid][person] = _choices(row, question, at)
        answers.people.setdefault(qid, {})[person] = (row["gender"], row["age_band"])
        answers.first_row.setdefault(qid, at)
    return answers


def _quota(question_id: str, people: dict[str, tuple[str, str]], profile: Profile) -> list[QuotaShortfall]:
    """Shortfalls against the quota: N respondents, split evenly over genders x age bands."""
    settings = profile.survey
    expected = settings.respondents_per_question
    short = []
    if len(people) < expected:
        short.append(QuotaShortfall(question_id, "respondents", expected, len(people)))
    genders, bands = settings.quota_genders, settings.quota_age_bands
    if genders and bands:
        cells = Counter(people.values())
        per_cell = expected // (len(genders) * len(bands))
        for gender in genders:
            for band in bands:
                if cells[(gender, band)] < per_cell:
                    short.append(QuotaShortfall(question_id, f"cell:{gender}/{band}", per_cell, cells[(gender, band)]))
    return short


def load_respondent_results(path: Path, questions_path: Path, profile: Profile) -> SurveyResults:
    """The respondent rows counted per question into votes (in the questionnaire's option order), each
    question's votes checked like a released result's, and the quota shortfalls listed."""
    questions = load_questions(questions_path)
    lists = profile_group_lists(profile)
    answers = _read_answers(path, questions, questions_path, profile)
    entries, shortfalls = [], []
    for qid in sorted(answers.choices):
        question = questions[qid]
        votes = Counter(c for chosen in answers.choices[qid].values() for c in chosen)
        respondents = len(answers.choices[qid])
        group_votes = {g: votes.get(g, 0) for g in question.options}
        at = answers.first_row[qid]
        check_votes(question.category, question.stereotype, group_votes, votes.get(NO_STEREO, 0),
                    question.survey_type, respondents, lists, at)
        entries.append(SurveyResult(question.category, question.stereotype, group_votes, votes.get(NO_STEREO, 0),
                                    respondents, question.survey_type, at, qid))
        shortfalls.extend(_quota(qid, answers.people[qid], profile))
    missing = sorted(set(questions) - set(answers.choices))
    notes = tuple(f"question {qid} has no answers" for qid in missing)
    merged, merge_notes = merge_duplicates(entries)
    return SurveyResults(str(path), tuple(merged), notes + tuple(merge_notes), tuple(shortfalls))
