"""Reading model predictions in every accepted format (docs/reference/scoring.md#what-score-reads) and matching them to
the release strictly: nothing is guessed, a refusal names the file, row and column (the line a row starts on). Pandas,
not ``core.tables``: scoring works on whole frames of 100k+ rows; the project's input rules still apply
(``check_input_file``, a UTF-8 BOM dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.errors import Location, UserError
from core.text_files import check_input_file, json_records
from tasks.evaluation.parse import LETTERS, PARSERS, answer_forms, parse_answers
from tasks.evaluation.prompts import Prompt, ReleaseSamples, ordered_choices, read_table

UPSTREAM_NAME = re.compile(r"_evaluation_(?P<prompt>[0-9]+)_(?P<model>.+?)(?P<raw>_predictions)?$")
RAW_NAME = re.compile(r"^raw_p(?P<prompt>[0-9]+)$")
TOPIC = re.compile(r"^(?P<release>.+)_evaluation_(?P<prompt>[0-9]+)$")  # upstream's topic: KoBBQ_test_evaluation_5
SUFFIX = re.compile(r"-[012]$")


@dataclass
class Submission:
    """The predictions of one model for one prompt (``None``: in the release's own wording), as read."""

    model: str
    prompt_id: int | None
    source: Path
    ids: list[str]
    values: list[str]  # model text (``raw``) or a choice text / letter
    raw: bool
    file_rows: list[int]
    topic_release: str | None = None  # the release and split the rows' ``topic`` names (``KoBBQ_test``)
    truth: list[str] | None = None  # upstream's ``truth``: the answer's letter in each row's choice order


@dataclass
class Run:
    """A submission matched to the release: one scored row per answered (sample, order)."""

    model: str
    prompt_id: int | None
    source: Path
    rows: pd.DataFrame
    ooc: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    parser_disagreements: int | None = None  # raw input: answers the other parser reads differently


def read_predictions(path: Path, model: str | None = None, prompt: int | None = None) -> list[Submission]:
    """Read one predictions file into submissions, one per (model, prompt) it holds."""
    check_input_file(path, "predictions file")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        frame = _read_jsonl(path)
    elif suffix in (".tsv", ".csv"):
        frame = _with_lines(read_table(path, "\t" if suffix == ".tsv" else ",", encoding="utf-8-sig",
                                       skip_blank_lines=False))
    else:
        raise UserError("unknown predictions format: give a .tsv, .csv or .jsonl file", path)
    if frame.empty:
        raise UserError("holds no predictions", path)
    return _submissions(frame, path, model, prompt)


def _with_lines(frame: pd.DataFrame) -> pd.DataFrame:
    """Each record's first line in the file (``_row``; the header is line 1), blank lines dropped: upstream's raw
    answers are quoted cells over several lines, and an error must point where an editor shows the row."""
    spans = 1 + sum((frame[c].str.count("\n").to_numpy(np.int64) for c in frame.columns),
                    start=np.zeros(len(frame), dtype=np.int64))
    starts = 2 + np.cumsum(spans) - spans
    blank = (frame == "").all(axis=1).to_numpy()
    return frame.assign(_row=starts).loc[~blank].reset_index(drop=True)


def _read_jsonl(path: Path) -> pd.DataFrame:
    records = []
    for where, record in json_records(path):
        if not isinstance(record, dict):
            raise UserError("each line must be a JSON object", where)
        if "doc" in record and "resps" in record:
            record = _from_log_sample(record, where)
        if record.get("status") == "failed":
            continue  # the request got no answer: missing, not out-of-choice
        records.append({**{k: "" if v is None else v for k, v in record.items()}, "_row": where.row})
    return pd.DataFrame.from_records(records)


def _from_log_sample(sample: dict, where: Location) -> dict:
    """A ``--log_samples`` line of an exported lm-eval task: the request is its ``doc``, the text its first response."""
    try:
        doc = sample["doc"]
        return {"id": doc["id"], "prompt_id": int(doc["prompt_id"]), "raw": sample["resps"][0][0] or ""}
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise UserError(f"an lm-eval sample without the exported task's fields ({exc!r})", where) from None


def _submissions(frame: pd.DataFrame, path: Path, model: str | None, prompt: int | None) -> list[Submission]:
    id_column = next((c for c in ("id", "guid", "sample_id") if c in frame.columns), None)
    value_column = next((c for c in ("raw", "prediction") if c in frame.columns), None)
    if id_column is None or value_column is None:
        raise UserError("expected columns sample_id,prediction (choice text or letter), guid,raw or id,raw "
                        "(model text); found " + ", ".join(c for c in frame.columns if c != "_row"),
                        Location(str(path), 1))
    named = UPSTREAM_NAME.search(path.stem)
    raw_named = RAW_NAME.match(path.stem)
    # A raw_p<N>.tsv is named by its folder (`kobbq eval run` writes <out>/<model>/raw_p1.tsv); given as a bare
    # file name, that folder is the working folder, named by its resolved path.
    folder = path.resolve().parent.name if raw_named else ""
    default_model = model or (named["model"] if named else folder or path.stem)
    default_prompt = prompt if prompt is not None else (
        int(named["prompt"]) if named else int(raw_named["prompt"]) if raw_named else None)
    if "model" in frame.columns:
        _one_model_for_option(frame, path, model)
    if model is None and "model" in frame.columns:
        models = frame["model"].astype(str).replace("", default_model)
    else:
        models = pd.Series(default_model, index=frame.index)
    topics = _topics(frame, path)
    prompts = _prompt_column(frame, path, default_prompt,
                             topics["prompt"] if topics is not None and prompt is None else None)
    submissions = []
    for (run_model, run_prompt), block in frame.groupby([models, prompts], sort=True, dropna=False):
        if not str(run_model).strip() or not str(run_model).isprintable():
            raise UserError(f"model name {str(run_model)[:80]!r} is empty or holds control characters (a line "
                            "break would split a row of results.md); give --model NAME",
                            Location(str(path), int(block["_row"].iloc[0]), "model" if model is None else None))
        submissions.append(Submission(
            model=str(run_model), prompt_id=None if run_prompt < 0 else int(run_prompt), source=path,
            ids=block[id_column].astype(str).tolist(), values=block[value_column].astype(str).tolist(),
            raw=value_column == "raw", file_rows=block["_row"].astype(int).tolist(),
            topic_release=None if topics is None else _one_release(topics.loc[block.index], block, path),
            truth=block["truth"].astype(str).tolist() if "truth" in block.columns else None))
    return submissions


def _one_model_for_option(frame: pd.DataFrame, path: Path, model: str | None) -> None:
    """``--model`` names the one model of a file: a file whose rows name several would have their answers
    merged into one run under that name (and scored as one model, or refused as duplicates)."""
    named = frame["model"].astype(str)
    names = list(dict.fromkeys(named[named != ""]))
    if model is not None and len(names) > 1:
        row = int(frame["_row"].iloc[int(np.flatnonzero((named == names[1]).to_numpy())[0])])
        raise UserError(f"the rows name {len(names)} models ({', '.join(map(repr, names[:3]))}"
                        f"{', ...' if len(names) > 3 else ''}) and --model {model!r} would merge their answers into "
                        "one run: drop --model to score each under its own name, or give one model's rows",
                        Location(str(path), row, "model"))


def _topics(frame: pd.DataFrame, path: Path) -> pd.DataFrame | None:
    """Upstream's ``topic`` column split into release (``KoBBQ_test``) and prompt; None without the column."""
    if "topic" not in frame.columns:
        return None
    parts = frame["topic"].astype(str).str.strip().str.extract(TOPIC)
    bad = parts["prompt"].isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise UserError(f"topic {frame['topic'].iloc[row]!r} is not <release>_<split>_evaluation_<prompt>, as "
                        "upstream's inference script writes it", Location(str(path), int(frame["_row"].iloc[row]),
                                                                          "topic"))
    return parts.assign(prompt=parts["prompt"].astype(int))


def _one_release(topics: pd.DataFrame, block: pd.DataFrame, path: Path) -> str:
    releases = topics["release"].to_numpy(object)
    other = np.flatnonzero(releases != releases[0])
    if len(other):
        raise UserError(f"topic names release {releases[other[0]]!r}, an earlier row {releases[0]!r}: one run's "
                        "answers come from one release and split", Location(str(path),
                                                                            int(block["_row"].iloc[other[0]]), "topic"))
    return str(releases[0])


def _prompt_column(frame: pd.DataFrame, path: Path, default: int | None,
                   from_topic: pd.Series | None = None) -> pd.Series:
    """Each row's prompt id (-1: none, the release's own wording); a row's own prompt_id wins, then its topic's
    (``from_topic``, when no --prompt was given), then ``default`` (--prompt or the file name)."""
    fallback = -1 if default is None else default
    if "prompt_id" not in frame.columns:
        return from_topic if from_topic is not None else pd.Series(fallback, index=frame.index)
    text = frame["prompt_id"].astype(str).str.strip()
    bad = ~(text.str.fullmatch(r"[0-9]+") | (text == ""))
    if bad.any():
        row = frame.loc[bad, "_row"].iloc[0]
        raise UserError(f"prompt_id {text[bad].iloc[0]!r} is not a number", Location(str(path), int(row), "prompt_id"))
    return text.where(text != "", str(fallback)).astype(int)


def expected_rows(release: ReleaseSamples, prompt: Prompt | None, suffixed: bool) -> pd.DataFrame:
    """What a complete submission answers: one row per (sample, order), or per sample for plain IDs."""
    attributes = release.attributes
    unknown = release.profile.release.unknown_expression if prompt is None else prompt.unknown
    if suffixed:
        requests = ordered_choices(release, unknown)
        frame = attributes.loc[attributes.index.repeat(3)].reset_index(drop=True)
        frame["id"] = requests["id"].to_numpy()
        frame["A"], frame["B"], frame["C"] = (requests[letter].to_numpy() for letter in LETTERS)
        frame["answer"] = requests["answer_text"].to_numpy()
        frame["answer_letter"] = requests["answer"].to_numpy()
    else:
        frame = attributes.copy()
        frame["id"] = release.frame["sample_id"].to_numpy()
        release_unknown = release.profile.release.unknown_expression
        choices = np.where(release.choices == release_unknown, unknown, release.choices)
        frame["A"], frame["B"], frame["C"] = choices[:, 0], choices[:, 1], choices[:, 2]
        answers = release.frame["answer"].to_numpy(object)
        frame["answer"] = np.where(answers == release_unknown, unknown, answers)
    frame["unknown"] = unknown
    return frame.set_index("id", drop=False)


def match_submission(submission: Submission, release: ReleaseSamples, prompts: dict[int, Prompt],
                     allow_missing: bool = False, parser: str = "paper") -> Run:
    """Check a submission against the release and turn it into scored rows (predictions as choice texts)."""
    prompt = _prompt_of(submission, prompts)
    suffixed = bool(submission.ids) and SUFFIX.search(submission.ids[0]) is not None
    expected = expected_rows(release, prompt, suffixed)
    ids = pd.Index(submission.ids)
    _check_ids(submission, ids, expected, release)
    missing = expected.index.difference(ids, sort=False).tolist()
    if missing and not allow_missing:
        raise UserError(f"{len(missing)} of {len(expected)} expected predictions are missing (first: {missing[0]}); "
                        "score a partial run with --allow-missing", submission.source)
    rows = expected.loc[ids].reset_index(drop=True)
    _check_topic(submission, release)
    if submission.truth is not None and suffixed:
        _check_truth(submission, rows)
    values = np.asarray(submission.values, dtype=object)
    disagreements = None
    if submission.raw:
        if prompt is None:
            raise UserError("model text needs its prompt's choices: give --prompt ID (or prompt_id per row)",
                            submission.source)
        # the release's language: its answer markers and forms, and its other phrasings of the unknown option
        forms = answer_forms(release.profile.evaluation, release.profile.release.unknown_expressions)
        parsed = parse_answers(values, rows["A"], rows["B"], rows["C"], PARSERS[parser], forms, rows["unknown"])
        other = parse_answers(values, rows["A"], rows["B"], rows["C"],
                              PARSERS["strict" if parser == "paper" else "paper"], forms, rows["unknown"])
        disagreements = int((parsed != other).sum())
    else:
        parsed = values
        _check_unknown_wording(submission, values, rows, prompt, prompts, release)
        if not suffixed and np.isin(values, LETTERS).any():
            position = int(np.flatnonzero(np.isin(values, LETTERS))[0])
            raise UserError("a letter names a choice only with its order: use the suffixed ID (<sample_id>-0/-1/-2) "
                            "or the choice text", Location(str(submission.source), submission.file_rows[position],
                                                           "prediction"))
    rows["parsed"] = parsed
    rows["raw"] = values
    rows["prediction"] = _letters_to_text(parsed, rows)
    answered = (rows["prediction"] == rows["A"]) | (rows["prediction"] == rows["B"]) | (
        rows["prediction"] == rows["C"])
    ooc = rows.loc[~answered, ["id", "A", "B", "C", "raw", "parsed"]].reset_index(drop=True)
    return Run(submission.model, submission.prompt_id, submission.source, rows, ooc, missing, disagreements)


def _prompt_of(submission: Submission, prompts: dict[int, Prompt]) -> Prompt | None:
    if submission.prompt_id is None:
        return None
    if submission.prompt_id not in prompts:
        raise UserError(f"prompt {submission.prompt_id} is not in the prompt table (it has {sorted(prompts)})",
                        submission.source)
    return prompts[submission.prompt_id]


def _check_ids(submission: Submission, ids: pd.Index, expected: pd.DataFrame, release: ReleaseSamples) -> None:
    unknown = expected.index.get_indexer(ids) < 0
    if unknown.any():
        position = int(np.flatnonzero(unknown)[0])
        bad = ids[position]
        kind = "suffixed (-0/-1/-2)" if SUFFIX.search(submission.ids[0]) else "plain"
        why = (f"is not a sample of {release.path.name}" if SUFFIX.sub("", bad) not in release.frame["sample_id"].values
               else f"mixes plain and suffixed IDs (the first row's ID is {kind})")
        raise UserError(f"ID {bad!r} {why}", Location(str(submission.source), submission.file_rows[position], "id"))
    duplicated = ids.duplicated()
    if duplicated.any():
        position = int(np.flatnonzero(duplicated)[0])
        first = int(np.flatnonzero(ids == ids[position])[0])
        raise UserError(f"ID {ids[position]!r} appears twice (first at row {submission.file_rows[first]})",
                        Location(str(submission.source), submission.file_rows[position], "id"))


def _check_topic(submission: Submission, release: ReleaseSamples) -> None:
    scored = f"{release.name}_{release.split}"
    if submission.topic_release not in (None, scored):
        raise UserError(f"the rows' topic says these answers are to {submission.topic_release}, but the release scored "
                        f"is {scored} (give the release, or --split, they were made from)",
                        Location(str(submission.source), submission.file_rows[0], "topic"))


def _check_truth(submission: Submission, rows: pd.DataFrame) -> None:
    """Upstream's ``truth`` is the answer's letter in the row's choice order: it must be the release's, or the
    answers were made from other samples (another build) or in another order."""
    truth = np.asarray(submission.truth, dtype=object)
    differ = truth != rows["answer_letter"].to_numpy(object)
    if differ.any():
        position = int(np.flatnonzero(differ)[0])
        raise UserError(f"truth is {truth[position]!r} but the release's answer to {submission.ids[position]} is "
                        f"{rows['answer_letter'].iloc[position]!r} ({int(differ.sum()):,} of {len(truth):,} rows "
                        "differ): these answers were made from other samples or choice orders",
                        Location(str(submission.source), submission.file_rows[position], "truth"))


def _check_unknown_wording(submission: Submission, values: np.ndarray, rows: pd.DataFrame, prompt: Prompt | None,
                           prompts: dict[int, Prompt], release: ReleaseSamples) -> None:
    """Answers in another prompt's unknown wording, at least as often as in this one's: a prompt mismatch. A model that
    now and then writes another prompt's phrase as free text is not refused."""
    own = rows["unknown"].iloc[0] if len(rows) else None
    wordings = {p.unknown: f"prompt {p.prompt_id}" for p in prompts.values()}
    wordings.setdefault(release.profile.release.unknown_expression, "the release")
    own_count = int((values == own).sum())
    for text, name in wordings.items():
        foreign = values == text
        if text == own or not foreign.any() or foreign.sum() < max(own_count, 1):
            continue
        position = int(np.flatnonzero(foreign)[0])
        scored = f"prompt {prompt.prompt_id}" if prompt else "the release's own wording"
        raise UserError(f"prompt mismatch: {int(foreign.sum())} answers are {text!r}, the unknown wording of {name}, "
                        f"and {own_count} are {own!r}, the wording of {scored}; give the prompt the predictions were "
                        "made with (--prompt ID)", Location(str(submission.source), submission.file_rows[position],
                                                          "prediction"))


def _letters_to_text(parsed: np.ndarray, rows: pd.DataFrame) -> np.ndarray:
    """A letter becomes its choice's text; anything else stays as it is (an OOC answer)."""
    out = parsed.copy()
    for letter in LETTERS:
        chosen = parsed == letter
        out[chosen] = rows[letter].to_numpy(object)[chosen]
    return out


def runs_frame(runs: list[Run]) -> pd.DataFrame:
    """The scored rows of every run, told apart by ``model`` and ``prompt`` (0: the release's own wording)."""
    seen: dict[tuple[str, int], Path] = {}
    for run in runs:
        key = (run.model, run.prompt_id or 0)
        if key in seen:
            raise UserError(f"model {run.model!r} prompt {run.prompt_id} is given twice (also in {seen[key]}); "
                            "name the models apart with --model or a model column", run.source)
        seen[key] = run.source
    return pd.concat([run.rows.assign(model=run.model, prompt=run.prompt_id or 0) for run in runs], ignore_index=True)
