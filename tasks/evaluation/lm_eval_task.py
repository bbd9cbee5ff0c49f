"""A release as an lm-evaluation-harness task folder in the harness's BBQ-family layout, and the harness's answers back
as answer files (docs/reference/scoring.md#lm-evaluation-harness). The task generates (greedy, 30 new tokens as
upstream), so it runs on any model the harness supports, API models too.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from core.atomic import write_text
from core.errors import UserError
from core.text_files import json_records
from tasks.evaluation import lm_eval_metrics
from tasks.evaluation.answer_cache import Answer
from tasks.evaluation.metrics import HIGHER, family
from tasks.evaluation.predictions import expected_rows
from tasks.evaluation.prepared_folder import read_summary
from tasks.evaluation.prompts import PREPARED_PROMPTS, read_prompt_table, read_release, select_prompts
from tasks.evaluation.runs import Request, load_requests, write_answer_files
from tasks.release.write import lm_eval_task_name

METRICS = family("paper")  # each aggregated by the function of its name in utils.py (lm_eval_metrics)
# What tasks.evaluation.metrics.score_rows reads of a row besides its prediction and choices
SCORED_COLUMNS = ("answer", "unknown", "biased_answer", "dis", "biased_context", "template", "label", "category")


def export_task(release: Path, out: Path, prepared: Path) -> list[Path]:
    """Write the task folder for the prepared requests of ``release``; returns the files written."""
    settings = read_summary(Path(prepared))
    samples = read_release(Path(release), settings.get("split"))
    requests = load_requests(Path(prepared))
    prefix, asked = lm_eval_task_name(samples.name), sorted({r.prompt_id for r in requests})
    table = Path(prepared) / PREPARED_PROMPTS
    prompts = {prompt.prompt_id: prompt for prompt in select_prompts(read_prompt_table(table), asked, table)}
    out = Path(out)
    written = []
    for prompt_id in asked:
        docs = _documents([r for r in requests if r.prompt_id == prompt_id],
                          expected_rows(samples, prompts[prompt_id], suffixed=True), Path(prepared) / "requests.jsonl")
        written.append(write_text(out / f"{prefix}_p{prompt_id}.jsonl",
                                  "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)))
        written.append(write_text(out / f"{prefix}_p{prompt_id}.yaml",
                                  f"include: _{prefix}_common_yaml\ntask: {prefix}_p{prompt_id}\n"
                                  f"dataset_kwargs:\n  data_file: {prefix}_p{prompt_id}.jsonl\n"))
    profile = samples.profile
    reading = {"evaluation": profile.evaluation.model_dump(mode="json", exclude={"fallback_prompts"}),
               "unknown_expressions": profile.release.unknown_expressions, "mode": samples.split}
    written.append(write_text(out / lm_eval_metrics.READING, json.dumps(reading, ensure_ascii=False, indent=2) + "\n"))
    written.append(write_text(out / f"_{prefix}_common_yaml", _common_yaml(samples.name)))
    written.append(write_text(out / f"{prefix}.yaml", _group_yaml(prefix, asked)))
    utils = out / "utils.py"
    shutil.copyfile(lm_eval_metrics.__file__, utils)
    return written + [utils]


def _common_yaml(release_name: str) -> str:
    metrics = "".join(f"  - metric: {m.name}\n    aggregation: !function utils.{m.name}\n"
                      f"    higher_is_better: {'true' if m.better == HIGHER else 'false'}\n" for m in METRICS)
    return (f"# {release_name}: the prepared prompts of a release, answered by generation, read and scored as\n"
            "# kobbq eval score does (utils.py imports the installed kobbq-builder).\n"
            "# Written by kobbq eval export-lm-eval.\n"
            "custom_dataset: !function utils.load_prompt_data\n"
            "test_split: test\n"
            "output_type: generate_until\n"
            'doc_to_text: "{{prompt}}"\n'
            "doc_to_target: answer\n"
            "generation_kwargs:\n  until: []\n  max_gen_toks: 30\n  do_sample: false\n  temperature: 0.0\n"
            "process_results: !function utils.process_results\n"
            f"metric_list:\n{metrics}"
            "metadata:\n  version: 1.0\n")


def _group_yaml(prefix: str, prompts: list[int]) -> str:
    tasks = "".join(f"  - {prefix}_p{p}\n" for p in prompts)
    metrics = "".join(f'  - metric: "{m.name}"\n    weight_by_size: false\n' for m in METRICS)
    return f"group: {prefix}\ntask:\n{tasks}aggregate_metric_list:\n{metrics}metadata:\n  version: 1.0\n"


def _documents(requests: list[Request], rows: pd.DataFrame, where: Path) -> list[dict]:
    """The prepared requests of one prompt, each with its row as ``kobbq eval score`` scores it."""
    absent = [r.id for r in requests if r.id not in rows.index]
    if absent:
        raise UserError(f"request {absent[0]} is not a sample of the release (another release or split?)", where)
    scored = rows.loc[[r.id for r in requests], list(SCORED_COLUMNS)].to_dict("records")
    return [{"id": r.id, "sample_id": r.sample_id, "prompt_id": r.prompt_id, "prompt": r.prompt,
             "choices": r.choices, "answer": r.answer, "row": row} for r, row in zip(requests, scored)]


def answers_from_log_samples(paths: Iterable[Path], model: str, out: Path) -> list[Path]:
    """The harness's ``samples_<task>_*.jsonl`` lines as this project's answer files for ``model``, in prepared order
    (prompt, doc); a file with no sample (empty, or blank lines only) is an error, not an empty run."""
    found: list[tuple[tuple[int, int], Request, Answer]] = []
    for path in sorted(Path(p) for p in paths):
        before = len(found)
        for where, sample in json_records(path):
            try:
                doc, raw = sample["doc"], sample["resps"][0][0]
                request = Request(str(doc["id"]), str(doc["sample_id"]), int(doc["prompt_id"]), str(doc["prompt"]),
                                  dict(doc["choices"]), str(doc["answer"]))
                position = (request.prompt_id, int(sample["doc_id"]))
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise UserError(f"not an lm-eval sample of an exported task ({exc!r})", where) from None
            if raw is not None and not isinstance(raw, str):
                raise UserError("the response (resps[0][0]) is not text", where)
            found.append((position, request, Answer(raw, "ok") if raw and raw.strip() else Answer("", "empty")))
        if len(found) == before:
            raise UserError("holds no lm-eval samples (an empty file?): give the samples_<task>_*.jsonl files that "
                            "lm_eval --log_samples wrote", path)
    found.sort(key=lambda item: item[0])
    return write_answer_files([r for _, r, _ in found], [a for _, _, a in found], model, Path(out))
