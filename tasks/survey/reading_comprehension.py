"""Reading-comprehension results: the share of respondents who read each template's context right.

Aggregated ``category, template_id, correct, total``, or ``question_id, respondent_id, answer``
scored against the reading questionnaire (``reading_questions.csv``: ``question_id, category,
template_id, correct_answer, options``); an answer must be one of its question's options, and a
key must be among them. A CSV or the first sheet of an xlsx; bad input raises ``UserError``
naming the file, (sheet,) row and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Location, UserError
from core.tables import at_column, read_table
from tasks.survey.groups import norm
from tasks.survey.results import OPTION_SEPARATOR, new_question_id

READING_AGGREGATED_COLUMNS = ["category", "template_id", "correct", "total"]
READING_RESPONDENT_COLUMNS = ["question_id", "respondent_id", "answer"]
READING_QUESTION_COLUMNS = ["question_id", "category", "template_id", "correct_answer", "options"]


@dataclass(frozen=True)
class ReadingResults:
    source: str
    rates: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # (category, ID) -> (correct, total)


@dataclass(frozen=True)
class ReadingQuestion:
    question_id: str
    template: tuple[str, int]  # (category, template ID)
    correct_answer: str
    options: tuple[str, ...]


def _template_id(row: dict[str, str], at: Location) -> int:
    try:
        return int(row["template_id"])
    except ValueError:
        raise UserError(f"template_id {row['template_id']!r} is not a whole number",
                        at_column(at, "template_id")) from None


def load_reading_questions(path: Path) -> dict[str, ReadingQuestion]:
    """The reading questionnaire (``reading_questions.csv`` as exported): its answer key and options.

    A question whose key is not among its options could never be answered correctly, so it is
    rejected rather than scored.
    """
    rows, where = read_table(path, READING_QUESTION_COLUMNS)
    questions: dict[str, ReadingQuestion] = {}
    for row, at in zip(rows, where):
        qid = new_question_id(row, at, questions)
        template = (row["category"], _template_id(row, at))
        options = tuple(norm(o) for o in row["options"].split(OPTION_SEPARATOR) if o.strip())
        if not options:
            raise UserError("no options", at_column(at, "options"))
        key = norm(row["correct_answer"])
        if key not in options:
            raise UserError(f"the answer key {row['correct_answer']!r} is not among the question's options "
                            f"({'; '.join(options)})", at_column(at, "correct_answer"))
        questions[qid] = ReadingQuestion(qid, template, key, options)
    return questions


def load_reading_results(path: Path, questions: Path | None = None) -> ReadingResults:
    """Aggregated ``category, template_id, correct, total`` or respondent answers scored against
    the reading questionnaire's ``correct_answer`` (default: ``reading_questions.csv`` beside it)."""
    path = Path(path)
    rows, where = read_table(path, [])
    header = set(rows[0]) if rows else set()
    if set(READING_AGGREGATED_COLUMNS) <= header:
        return ReadingResults(str(path), _aggregated_rates(rows, where))
    if not set(READING_RESPONDENT_COLUMNS) <= header:
        raise UserError("expected the columns category, template_id, correct, total (aggregated) or "
                        "question_id, respondent_id, answer (one row per respondent x question)", path)
    return ReadingResults(str(path), _scored_rates(rows, where, questions or path.parent / "reading_questions.csv"))


def _aggregated_rates(rows: list[dict[str, str]], where: list[Location]) -> dict[tuple[str, int], tuple[int, int]]:
    rates: dict[tuple[str, int], tuple[int, int]] = {}
    for row, at in zip(rows, where):
        template_id = _template_id(row, at)
        numbers = []
        for column in ("correct", "total"):
            try:
                numbers.append(int(row[column]))
            except ValueError:
                raise UserError(f"{column} {row[column]!r} is not a whole number", at_column(at, column)) from None
        correct, total = numbers
        if total <= 0 or not 0 <= correct <= total:
            raise UserError(f"correct / total = {correct} / {total} is impossible", at_column(at, "correct"))
        key = (row["category"], template_id)
        if key in rates:
            raise UserError(f"template {row['category']}|{template_id} listed twice", at_column(at, "template_id"))
        rates[key] = (correct, total)
    return rates


def _scored_rates(rows: list[dict[str, str]], where: list[Location],
                  key_path: Path) -> dict[tuple[str, int], tuple[int, int]]:
    """Respondent answers scored against the answer key, counted per template."""
    answer_key = load_reading_questions(key_path)
    tallies: dict[tuple[str, int], list[int]] = {}
    seen: set[tuple[str, str]] = set()
    for row, at in zip(rows, where):
        question = answer_key.get(row["question_id"])
        if question is None:
            raise UserError(f"unknown reading question ID {row['question_id']!r} (not in {key_path.name})",
                            at_column(at, "question_id"))
        if (row["question_id"], row["respondent_id"]) in seen:
            raise UserError(f"respondent {row['respondent_id']!r} answered {row['question_id']!r} twice",
                            at_column(at, "respondent_id"))
        seen.add((row["question_id"], row["respondent_id"]))
        answer = norm(row["answer"])
        if answer not in question.options:
            raise UserError(f"answer {row['answer']!r} is not an option of reading question {question.question_id} "
                            f"({'; '.join(question.options)})", at_column(at, "answer"))
        tally = tallies.setdefault(question.template, [0, 0])
        tally[0] += answer == question.correct_answer
        tally[1] += 1
    return {k: (c, t) for k, (c, t) in tallies.items()}
