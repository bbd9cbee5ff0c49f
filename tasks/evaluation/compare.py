"""`kobbq eval compare`: scored runs (``results_intervals.tsv``) and published results tables in the upstream layout
side by side, mean ± std over prompts per model (docs/reference/scoring.md#compare).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from core.errors import Location, UserError
from core.profile import available_profiles, load_profile
from tasks.evaluation.metrics import METRIC_TABLE, METRICS, TITLES, UPSTREAM_HEADER, over_prompts
from tasks.evaluation.prompts import read_table

RESULTS_FILE = "results_intervals.tsv"
COMPARED = [metric.name for metric in METRIC_TABLE]  # what --metrics may name
KEY_COLUMNS = ("model", "prompt", "grouping", "group")
PROMPT_IN_NAME = re.compile(r"_(?P<prompt>[0-9]+)$")  # KoBBQ_test_5.tsv
PUBLISHED = " (published)"


def read_results(paths: list[Path]) -> pd.DataFrame:
    """Every run of every results file; a (model, prompt) found in two files is refused."""
    frames, origin = [], {}
    for given in paths:
        path = given / RESULTS_FILE if given.is_dir() else given
        if not path.exists():
            raise UserError(f"no {RESULTS_FILE} here (write one with `kobbq eval score`)", given)
        frame = read_table(path)
        if all(column in frame.columns for column in UPSTREAM_HEADER):  # the upstream results layout
            frame = results_table_runs(frame, path)
        missing = [c for c in (*KEY_COLUMNS, *METRICS) if c not in frame.columns]
        if missing:
            raise UserError(f"not a results table: lacks {', '.join(missing)} (give a `kobbq eval score` output "
                            "folder, its results_intervals.tsv, or a table in the upstream layout: model, category, "
                            "out-of-choice ratio, ...)", Location(str(path), 1))
        for metric in [c for c in frame.columns if c in COMPARED or c.endswith(("_low", "_high"))]:
            numbers = pd.to_numeric(frame[metric], errors="coerce")
            bad = numbers.isna() & (frame[metric] != "nan")
            if bad.any():
                raise UserError(f"{frame[metric][bad].iloc[0]!r} is not a number",
                                Location(str(path), int(bad.to_numpy().argmax()) + 2, metric))
            frame[metric] = numbers
        for run in frame[["model", "prompt"]].drop_duplicates().itertuples(index=False):
            key = (run.model, run.prompt)
            if key in origin:
                raise UserError(f"model {run.model!r} prompt {run.prompt} is also in {origin[key]}", path)
            origin[key] = path
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def template_labels() -> set[str]:
    """Every template label a shipped profile knows (ST, TM, NC; t, m, n ...): how a group is told from a category."""
    return {label for name in available_profiles() for label in load_profile(name).templates.labels}


def results_table_runs(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The table in compare's layout: model, prompt, grouping, group and the metrics by their short names."""
    runs = frame.rename(columns=dict(zip(UPSTREAM_HEADER[2:], METRICS))).rename(columns={"category": "group"})
    if runs.empty:
        raise UserError("holds no results", path)
    missing = runs["model"].str.strip() == ""
    if missing.any():
        raise UserError("a row without a model name", Location(str(path), int(missing.to_numpy().argmax()) + 2, "model"))
    if "prompt" in frame.columns:
        prompt = runs["prompt"]
    else:
        named = PROMPT_IN_NAME.search(path.stem)
        prompt = pd.Series(named["prompt"] if named else path.stem, index=runs.index)
        runs["model"] = runs["model"] + PUBLISHED
    labels = template_labels()
    grouping = ["overall" if group == "overall" else "label" if group in labels else "category"
                for group in runs["group"]]
    return runs.assign(prompt=prompt.astype(str), grouping=grouping)[["model", "prompt", "grouping", "group",
                                                                      *METRICS]]


def comparison(results: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Rows: groups in the order first seen; one column per (metric, model): 'mean ± std (k prompts)'."""
    optional = [m for m in COMPARED if m not in METRICS]  # BBQ's scores; EsBBQ's own metrics (its releases only)
    summary = over_prompts(results.assign(**{m: results.get(m, float("nan")) for m in optional}), metrics=COMPARED)
    models = list(dict.fromkeys(summary["model"]))
    groups = list(dict.fromkeys(zip(summary["grouping"], summary["group"])))
    indexed = summary.set_index(["model", "grouping", "group"])
    bounds = results.drop_duplicates(["model", "grouping", "group"]).set_index(["model", "grouping", "group"])
    table = pd.DataFrame({"group": [group for _, group in groups]})
    for metric in metrics:
        for model in models:
            cells = []
            for grouping, group in groups:
                if (model, grouping, group) not in indexed.index:
                    cells.append("")
                    continue
                row = indexed.loc[(model, grouping, group)]
                one = bounds.loc[(model, grouping, group)] if int(row["prompts"]) == 1 else None
                interval = (one.get(f"{metric}_low"), one.get(f"{metric}_high")) if one is not None else None
                cells.append(_cell(row[f"{metric}_mean"], row[f"{metric}_std"], int(row["prompts"]), interval))
            table[f"{TITLES.get(metric, metric)}: {model}"] = cells
    return table


def _cell(mean: float, std: float, prompts: int, interval: tuple[float, float] | None = None) -> str:
    """Mean ± std over prompts; one prompt: the value, with its bootstrap interval where there is one."""
    if pd.isna(mean):
        return "—"
    if prompts == 1 or pd.isna(std):
        if interval is not None and interval[0] is not None and not pd.isna(interval[0]):
            return f"{mean:.4f} [{interval[0]:.4f}, {interval[1]:.4f}]"
        return f"{mean:.4f}"
    return f"{mean:.4f} ± {std:.4f} ({prompts})"


def metric_names(wanted: list[str] | None) -> list[str]:
    names = wanted or METRICS
    unknown = [name for name in names if name not in COMPARED]
    if unknown:
        raise UserError(f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(COMPARED)}")
    return names
