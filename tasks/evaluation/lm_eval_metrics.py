"""lm-evaluation-harness's side of an exported task, copied as its ``utils.py``: the answers read and scored by this
project's own code (the installed kobbq-builder, not a copy that would drift), so that the harness's table is
``kobbq eval score``'s on the same answers. ``answer_reading.json`` beside it gives the language and scoring mode.
"""

from __future__ import annotations

import json
from functools import cache, partial
from pathlib import Path

import pandas as pd

from core.profile import EvaluationProfile
from tasks.evaluation.metrics import names, score_rows
from tasks.evaluation.parse import LETTERS, AnswerForms, answer_forms, parse_answers

READING = "answer_reading.json"
METRICS = names("paper")  # each aggregated by the function of its name below


def load_prompt_data(data_file: str, **_: object) -> dict:
    """The harness's ``custom_dataset``: this folder's JSONL for one prompt, as a ``test`` split."""
    import datasets

    path = Path(__file__).resolve().parent / data_file
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


@cache
def reading() -> tuple[AnswerForms, str]:
    """The answer forms of the release's language and the scoring mode, as ``answer_reading.json`` says."""
    settings = json.loads((Path(__file__).resolve().parent / READING).read_text(encoding="utf-8"))
    forms = answer_forms(EvaluationProfile.model_validate(settings["evaluation"]), settings["unknown_expressions"])
    return forms, settings["mode"]


def process_results(doc: dict, results: list[str]) -> dict[str, dict]:
    """The document's row with the model's answer read as ``kobbq eval score`` reads it, for every metric."""
    row = {**doc["choices"], **doc["row"]}
    parsed = parse_answers([results[0] or ""], [row["A"]], [row["B"]], [row["C"]], forms=reading()[0],
                           unknown=[row["unknown"]])[0]
    scored = {**row, "prediction": row[parsed] if parsed in LETTERS else parsed}
    return dict.fromkeys(METRICS, scored)


def overall(rows: list[dict], metric: str) -> float:
    """One paper metric over a task's rows, as ``kobbq eval score`` computes it for the prompt."""
    table = score_rows(pd.DataFrame.from_records(rows), reading()[1])
    return float(table.loc[table["grouping"] == "overall", metric].iloc[0])


# each paper metric's aggregation, by the name the task's metric_list gives it
ooc_ratio = partial(overall, metric="ooc_ratio")
acc_amb = partial(overall, metric="acc_amb")
acc_dis = partial(overall, metric="acc_dis")
diff_bias_amb = partial(overall, metric="diff_bias_amb")
diff_bias_dis = partial(overall, metric="diff_bias_dis")
