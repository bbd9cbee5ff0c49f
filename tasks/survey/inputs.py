"""The survey stage's inputs (``SurveyInputs``: which files) and their contents (``SurveyData``: read and checked), read
one way for every entry point. Results come as the released aggregated JSON or as respondent rows (CSV/xlsx) counted
into the same ``SurveyResult`` entries; bad input raises ``UserError`` naming the file, (sheet,) row and column."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import Location, UserError
from core.profile import Profile
from core.stage_contract import Context
from core.tables import at_column, read_table
from core.text_files import check_input_file, read_json
from tasks.survey.stereotypes import norm, profile_group_lists
from tasks.survey.rule_table import Override, load_overrides
from tasks.survey.results import (NO_STEREO, QuotaShortfall, SurveyResult, SurveyResults, check_votes,
                                  merge_duplicates, new_question_id, options, whole_number)

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
        questions[qid] = Question(qid, row["category"], norm(row["stereotype"]), int(row["survey_type"]),
                                  options(row["options"]), norm(row["no_stereotype_option"]))
    return questions


def _choices(row: dict[str, str], question: Question, at: Location) -> tuple[str, ...]:
    """One respondent's answer to one question, as option labels (``no_stereo`` for "no stereotype")."""
    chosen = tuple(NO_STEREO if c == question.no_stereotype_label else c for c in options(row["answer"]))
    if not chosen:
        raise UserError("empty answer", at_column(at, "answer"))
    if unknown := [c for c in chosen if c != NO_STEREO and c not in question.options]:
        raise UserError(f"answer {', '.join(map(repr, unknown))} is not an option of question "
                        f"{question.question_id}", at_column(at, "answer"))
    if NO_STEREO in chosen and len(chosen) > 1:
        raise UserError("'no stereotype' cannot be chosen together with a group", at_column(at, "answer"))
    if question.survey_type == 2 and len(chosen) > 1:
        raise UserError("a type-2 question takes one answer", at_column(at, "answer"))
    if len(set(chosen)) != len(chosen):
        raise UserError("the same option is chosen twice", at_column(at, "answer"))
    return chosen


Answers = dict[str, dict[str, tuple[tuple[str, str], tuple[str, ...]]]]  # question -> respondent -> (cell, choices)


def _read_answers(path: Path, questions: dict[str, Question], questions_path: Path, profile: Profile
                  ) -> tuple[Answers, dict[str, Location]]:
    """Every respondent row checked, grouped by question: each respondent's (gender, age band) and choices; and each
    question's first row."""
    rows, where = read_table(path, RESPONDENT_COLUMNS)
    survey = profile.survey
    quota = (("gender", "gender", survey.quota_genders), ("age_band", "age band", survey.quota_age_bands))
    answers: Answers = {}
    first_row: dict[str, Location] = {}
    for row, at in zip(rows, where):
        qid, person = row["question_id"], row["respondent_id"]
        question = questions.get(qid)
        if question is None:
            raise UserError(f"unknown question ID {qid!r} (not in {questions_path.name})", at_column(at, "question_id"))
        if not person:
            raise UserError("empty respondent_id", at_column(at, "respondent_id"))
        for column, name, allowed in quota:
            if allowed and row[column] not in allowed:
                raise UserError(f"{name} {row[column]!r} is not one of {', '.join(allowed)}", at_column(at, column))
        if person in answers.setdefault(qid, {}):
            raise UserError(f"respondent {person!r} answered question {qid!r} twice", at_column(at, "respondent_id"))
        answers[qid][person] = ((row["gender"], row["age_band"]), _choices(row, question, at))
        first_row.setdefault(qid, at)
    return answers, first_row


def _quota(question_id: str, cells: list[tuple[str, str]], profile: Profile) -> list[QuotaShortfall]:
    """Shortfalls against the quota: N respondents, split evenly over genders x age bands."""
    settings = profile.survey
    expected = settings.respondents_per_question
    short = []
    if len(cells) < expected:
        short.append(QuotaShortfall(question_id, "respondents", expected, len(cells)))
    genders, bands = settings.quota_genders, settings.quota_age_bands
    if genders and bands:
        counts = Counter(cells)
        per_cell = expected // (len(genders) * len(bands))
        short += [QuotaShortfall(question_id, f"cell:{gender}/{band}", per_cell, counts[(gender, band)])
                  for gender in genders for band in bands if counts[(gender, band)] < per_cell]
    return short


def load_respondent_results(path: Path, questions_path: Path, profile: Profile) -> SurveyResults:
    """Respondent rows counted into votes per question, checked like a released result's, with quota shortfalls."""
    questions = load_questions(questions_path)
    lists = profile_group_lists(profile)
    answers, first_row = _read_answers(path, questions, questions_path, profile)
    entries, shortfalls = [], []
    for qid in sorted(answers):
        question = questions[qid]
        votes = Counter(c for _, chosen in answers[qid].values() for c in chosen)
        respondents = len(answers[qid])
        group_votes = {g: votes.get(g, 0) for g in question.options}
        check_votes(question.category, question.stereotype, group_votes, votes.get(NO_STEREO, 0),
                    question.survey_type, respondents, lists, first_row[qid])
        entries.append(SurveyResult(question.category, question.stereotype, group_votes, votes.get(NO_STEREO, 0),
                                    respondents, question.survey_type, first_row[qid], qid))
        shortfalls.extend(_quota(qid, [cell for cell, _ in answers[qid].values()], profile))
    notes = tuple(f"question {qid} has no answers" for qid in sorted(set(questions) - set(answers)))
    merged, merge_notes = merge_duplicates(entries)
    return SurveyResults(str(path), tuple(merged), notes + tuple(merge_notes), tuple(shortfalls))


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


def load_reading_questions(path: Path) -> dict[str, ReadingQuestion]:
    """The reading questionnaire as exported; a key that is not among its options could never be answered correctly,
    so it is rejected rather than scored."""
    rows, where = read_table(path, READING_QUESTION_COLUMNS)
    questions: dict[str, ReadingQuestion] = {}
    for row, at in zip(rows, where):
        qid = new_question_id(row, at, questions)
        template = (row["category"], whole_number(row, at, "template_id"))
        offered = options(row["options"])
        if not offered:
            raise UserError("no options", at_column(at, "options"))
        key = norm(row["correct_answer"])
        if key not in offered:
            raise UserError(f"the answer key {row['correct_answer']!r} is not among the question's options "
                            f"({'; '.join(offered)})", at_column(at, "correct_answer"))
        questions[qid] = ReadingQuestion(qid, template, key, offered)
    return questions


def load_reading_results(path: Path, questions: Path | None = None) -> ReadingResults:
    """Aggregated rates, or respondent answers scored against the reading questionnaire (default: the one beside it)."""
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
        template_id = whole_number(row, at, "template_id")
        correct, total = whole_number(row, at, "correct"), whole_number(row, at, "total")
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


@dataclass(frozen=True)
class SurveyData:
    results: SurveyResults
    reading: ReadingResults | None = None
    overrides: list[Override] = field(default_factory=list)


@dataclass(frozen=True)
class SurveyInputs:
    results: Path  # released JSON, or respondent-level CSV/xlsx
    reading: Path | None = None
    overrides: Path | None = None
    questions: Path | None = None  # the exported questions.csv, for respondent-level results
    allow_unmatched: bool = False  # results no template asks about: an error, unless the templates are survivors

    def files(self) -> dict[str, Path]:
        files = {"survey_results": self.results, "reading_results": self.reading,
                 "survey_overrides": self.overrides, "survey_questions": self.questions}
        return {role: path for role, path in files.items() if path is not None}

    def resolve(self, profile: Profile) -> SurveyInputs:
        """The same inputs with the overrides file used: the given one, else the profile's ``overrides.csv`` if any."""
        default = profile.file("survey") / "overrides.csv"
        return replace(self, overrides=self.overrides or (default if default.exists() else None))

    def check_exist(self) -> None:
        """Each input is there and a regular file (a folder, a device or a named pipe is named as such)."""
        for role, path in self.files().items():
            check_input_file(path, f"{role.replace('_', ' ')} file")

    def read(self, profile: Profile) -> SurveyData:
        """Read and check every survey input."""
        survey = load_survey_results(self.results, profile, self.questions)
        reading = load_reading_results(self.reading) if self.reading else None
        overrides = self.resolve(profile).overrides
        return SurveyData(survey, reading, load_overrides(overrides) if overrides else [])


def pipeline_inputs(ctx: Context) -> SurveyInputs:
    """The survey files a pipeline file names; the questions default to the ones this pipeline sent out."""
    cfg = ctx.pipeline.config.survey
    exported = ctx.output("survey-export", "questions")
    return SurveyInputs(results=ctx.file(cfg.results), reading=ctx.file(cfg.reading),
                        overrides=ctx.file(cfg.overrides),
                        questions=ctx.file(cfg.questions) or (exported if exported and exported.exists() else None),
                        allow_unmatched=cfg.allow_unmatched).resolve(ctx.profile)


def load_survey_results(path: Path, profile: Profile, questions: Path | None = None) -> SurveyResults:
    """The released JSON, or a respondent-level CSV/xlsx with the exported ``questions.csv`` (default: beside it)."""
    path = check_input_file(Path(path), "survey results file")  # a folder is not taken for respondent results
    if path.suffix.lower() == ".json":
        results = load_survey_json(path, profile)
    else:
        questions = questions or path.parent / "questions.csv"
        if not questions.exists():
            raise UserError(f"respondent-level results need the exported questions.csv (`--questions` on the "
                            f"command line, `survey.questions` in a pipeline file); {questions} does not exist", path)
        results = load_respondent_results(path, questions, profile)
    if not results.entries:  # a header alone, or []: every template would be dropped for want of votes
        raise UserError("holds no survey results (a header alone, or an empty list): every stereotype would be "
                        "dropped for want of votes; give the file with the respondents' answers", path)
    return results


def load_survey_json(path: Path, profile: Profile) -> SurveyResults:
    """The released aggregated results (``KoBBQ_survey_result.json``): a list of ``{"category", "stereotype",
    "survey_stats": {group: votes, ..., "no_stereo": votes}}``. Two groups mean a type-2 question (votes sum to the
    respondent count); more mean type 1 (several groups may be chosen; ``no_stereo`` counts "no stereotype")."""
    data = read_json(path, "survey results file")
    if not isinstance(data, list):
        raise UserError("expected a JSON list of {category, stereotype, survey_stats} entries", path)
    lists = profile_group_lists(profile)
    respondents = profile.survey.respondents_per_question
    entries = []
    for number, item in enumerate(data, start=1):
        where = Location(str(path), number)
        category, stereotype, stats = _entry(item, profile, where)
        votes = {norm(g): v for g, v in stats.items() if g != NO_STEREO}
        if len(votes) < 2:
            raise UserError("a question needs at least two groups", at_column(where, "survey_stats"))
        kind = 2 if len(votes) == 2 else 1
        check_votes(category, stereotype, votes, stats[NO_STEREO], kind, respondents, lists,
                    at_column(where, "survey_stats"))
        entries.append(SurveyResult(category, stereotype, votes, stats[NO_STEREO], respondents, kind, where))
    merged, notes = merge_duplicates(entries)
    return SurveyResults(str(path), tuple(merged), tuple(notes))


def _entry(item: object, profile: Profile, where: Location) -> tuple[str, str, dict[str, int]]:
    """One entry's category, normalised stereotype and vote counts, each checked."""
    if not isinstance(item, dict):
        raise UserError("entry is not an object", where)
    for key in ("category", "stereotype", "survey_stats"):
        if key not in item:
            raise UserError(f"entry has no {key!r}", at_column(where, key))
    category, stereotype, stats = item["category"], norm(str(item["stereotype"])), item["survey_stats"]
    if profile.category(category) is None:
        raise UserError(f"unknown category {category!r}", at_column(where, "category"))
    if not stereotype:
        raise UserError("empty stereotype", at_column(where, "stereotype"))
    if not isinstance(stats, dict) or NO_STEREO not in stats:
        raise UserError(f"survey_stats must be an object with a {NO_STEREO!r} count", at_column(where, "survey_stats"))
    for group, value in stats.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UserError(f"votes must be a whole number >= 0, got {value!r}",
                            at_column(where, f"survey_stats.{group}"))
    return category, stereotype, stats
