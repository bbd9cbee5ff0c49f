"""A release as an lm-evaluation-harness task folder, and the harness's answers back as answer files.

The folder follows the harness's BBQ-family layout (one shared YAML holding everything, one
three-line YAML per task, a group YAML): tasks are ``<release>_p<N>`` (``kobbq_p1`` ...), one
per prompt of the prepared folder, their data the prepared requests written as JSONL beside
the YAML and read by ``utils.load_prompt_data`` (relative to the folder, so it can be moved).
``utils.py`` is ``tasks/evaluation/lm_eval_metrics.py``: the paper's metrics. The task
generates (``generate_until``, greedy, 30 new tokens as upstream), so it runs on any model
the harness supports, API models included.

``read_log_samples`` reads the harness's ``--log_samples`` files back as (request, answer)
pairs; ``answers_from_log_samples`` writes them as this project's answer files
(``answers.jsonl``, ``raw_p<N>.tsv``), which ``kobbq eval score`` reads.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from core.errors import UserError
from tasks.evaluation.jsonl import json_records
from tasks.evaluation.prompts import ReleaseSamples, read_release
from core.atomic import write_text
from core.text_files import read_json
from tasks.evaluation import lm_eval_metrics
from tasks.evaluation.answer_cache import Answer
from tasks.evaluation.metric_table import family
from tasks.evaluation.runs import Request, load_requests, write_answer_files
from tasks.release.write import lm_eval_task_name

METRICS = family("paper")  # each aggregated by the function of its name in utils.py (lm_eval_metrics)


def export_task(release: Path, out: Path, prepared: Path) -> list[Path]:
    """Write the task folder for the prepared requests of ``release``; returns the files written."""
    settings = _read_json(Path(prepared) / "prepared.json")
    samples = read_release(Path(release), settings.get("split"))
    prefix = lm_eval_task_name(samples.name)
    unknown = samples.profile.release.unknown_expression
    requests_file = Path(prepared) / "requests.jsonl"
    by_id = _by_sample_id(samples)
    docs = [_document(r, by_id, unknown, requests_file) for r in load_requests(Path(prepared))]
    prompts = sorted({d["prompt_id"] for d in docs})
    out = Path(out)
    written = []
    for prompt_id in prompts:
        rows = [json.dumps(d, ensure_ascii=False) for d in docs if d["prompt_id"] == prompt_id]
        written.append(write_text(out / f"{prefix}_p{prompt_id}.jsonl", "\n".join(rows) + "\n"))
        written.append(write_text(out / f"{prefix}_p{prompt_id}.yaml",
                                  f"include: _{prefix}_common_yaml\ntask: {prefix}_p{prompt_id}\n"
                                  f"dataset_kwargs:\n  data_file: {prefix}_p{prompt_id}.jsonl\n"))
    written.append(write_text(out / f"_{prefix}_common_yaml", _common_yaml(samples.name)))
    written.append(write_text(out / f"{prefix}.yaml", _group_yaml(prefix, prompts)))
    utils = out / "utils.py"
    shutil.copyfile(lm_eval_metrics.__file__, utils)
    return written + [utils]


def _common_yaml(release_name: str) -> str:
    metrics = "".join(f"  - metric: {m.name}\n    aggregation: !function utils.{m.name}\n"
                      f"    higher_is_better: {'true' if m.higher_is_better else 'false'}\n" for m in METRICS)
    return (f"# {release_name}: the prepared prompts of a release, answered by generation and scored with the\n"
            "# paper's metrics (out-of-choice answers dropped). Written by kobbq eval export-lm-eval.\n"
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


def _read_json(path: Path) -> dict:
    summary = read_json(path, "prepared summary")
    if not isinstance(summary, dict):
        raise UserError("not a prepared summary (expected a JSON object): prepare the folder again", path)
    return summary


def _by_sample_id(release: ReleaseSamples) -> dict[str, dict]:
    """Per sample: its choices (in the release's unknown wording), biased answer, context and label."""
    frame = release.frame
    return {sample_id: {"choices": list(choices), "biased_answer": biased, "dis": bool(dis), "label_annotation": label}
            for sample_id, choices, biased, dis, label in zip(frame["sample_id"], release.choices,
                                                              frame["biased_answer"], release.attributes["dis"],
                                                              frame["label_annotation"])}


def _document(request: Request, samples: dict[str, dict], unknown: str, where: Path) -> dict:
    """A prepared request with the letters the metrics need (biased, unknown) and its context condition."""
    sample = samples.get(request.sample_id)
    if sample is None:
        raise UserError(f"request {request.id}: sample {request.sample_id} is not in the release "
                        "(another release or split?)", where)
    named = [c for c in sample["choices"] if c != unknown]  # the two people, as in the prepared choices
    letters = {text: letter for letter, text in request.choices.items()}
    unknown_letter = next(letter for letter, text in request.choices.items() if text not in named)
    return {"id": request.id, "sample_id": request.sample_id, "prompt_id": request.prompt_id,
            "prompt": request.prompt, "choices": request.choices, "answer": request.answer,
            "biased": letters[sample["biased_answer"]], "unknown": unknown_letter,
            "context_condition": "dis" if sample["dis"] else "amb",
            "label_annotation": sample.get("label_annotation", "")}


def read_log_samples(paths: Iterable[Path]) -> list[tuple[Request, Answer]]:
    """The harness's ``samples_<task>_*.jsonl`` lines as (request, answer), in prepared order (prompt, doc); a file
    with no sample (empty, or blank lines only) is an error, not an empty run."""
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
    return [(request, answer) for _, request, answer in sorted(found, key=lambda item: item[0])]


def answers_from_log_samples(paths: Iterable[Path], model: str, out: Path) -> list[Path]:
    """The harness's ``--log_samples`` files as this project's answer files for ``model``."""
    pairs = read_log_samples(paths)
    return write_answer_files([r for r, _ in pairs], [a for _, a in pairs], model, Path(out))
