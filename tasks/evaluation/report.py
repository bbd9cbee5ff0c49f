"""The score outputs: results.tsv (upstream layout), the intervals/BBQ table, results.md, ooc.tsv.

Floats are written with Python's shortest round-trip form, as the paper's script writes them, so a result can be
compared digit for digit; nothing carries a time, so two runs on the same predictions write the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from core.atomic import write_bytes
from core.errors import Location, UserError
from core.paths import relative_path
from core.tables import delimited_text, markdown_table
from tasks.audit.charts import saved
from tasks.evaluation import esbbq_metrics
from tasks.evaluation.metrics import (BBQ_METRICS, METRICS, TITLES, UPSTREAM_HEADER, Bootstrap, over_prompts,
                                      score_rows)
from tasks.evaluation.predictions import Run, match_submission, read_predictions, runs_frame
from tasks.evaluation.prepared_folder import SUMMARY, move_in, read_summary, staged
from tasks.evaluation.prompts import (PREPARED_PROMPTS, ReleaseSamples, read_prompt_table, read_release,
                                      resolve_prompt_table)

INTERVAL_METRICS = METRICS[1:] + BBQ_METRICS


def prompt_label(prompt: int) -> str:
    return str(prompt) if prompt else "release"


def results_tsv(table: pd.DataFrame) -> str:
    """The upstream columns (model, category, five metrics) in upstream row order, then the prompt."""
    records = [[row.model, row.group, *(float(getattr(row, m)) for m in METRICS), prompt_label(row.prompt)]
               for row in table.itertuples(index=False)]
    return delimited_text(UPSTREAM_HEADER + ["prompt"], records, "\t")


def intervals_tsv(table: pd.DataFrame) -> str:
    """Every number of a row: metrics, BBQ scores, bootstrap bounds, templates and rows behind it."""
    bounds = [f"{m}_{side}" for m in INTERVAL_METRICS for side in ("low", "high") if f"{m}_{side}" in table.columns]
    upstream = [m for m in esbbq_metrics.METRICS if m in table.columns]
    columns = ["model", "prompt", "grouping", "group", "templates", "rows", *METRICS, *BBQ_METRICS, *upstream, *bounds]
    records = [[prompt_label(v) if c == "prompt" else (float(v) if isinstance(v, float) else v)
                for c, v in zip(columns, values)] for values in table[columns].itertuples(index=False)]
    return delimited_text(columns, records, "\t")


def bias_score_tsv(table: pd.DataFrame) -> str:
    """EsBBQ's own four metrics in upstream's terms: per run, overall and per category as the release names it."""
    rows = table[table["grouping"].isin(("overall", "category"))]
    records = [[row["model"], prompt_label(row["prompt"]), row["esbbq_category"] or "overall",
                *(float(row[m]) for m in esbbq_metrics.METRICS)] for _, row in rows.iterrows()]
    return delimited_text(["model", "prompt", "category", *esbbq_metrics.METRICS], records, "\t")


def ooc_tsv(runs: list[Run]) -> str:
    """Every out-of-choice answer: what the model said and what the parser made of it."""
    records = []
    for run in runs:
        for row in run.ooc.itertuples(index=False):
            choices = json.dumps({"A": row.A, "B": row.B, "C": row.C}, ensure_ascii=False)
            records.append([run.model, prompt_label(run.prompt_id or 0), row.id, choices, row.raw, row.parsed])
    return delimited_text(["model", "prompt", "id", "choices", "raw", "parsed"], records, "\t")


def missing_tsv(runs: list[Run]) -> str:
    records = [[run.model, prompt_label(run.prompt_id or 0), sample] for run in runs for sample in run.missing]
    return delimited_text(["model", "prompt", "id"], records, "\t")


def _number(value: float) -> str:
    return "—" if pd.isna(value) else f"{value:.4f}"


def _cell(row: pd.Series, metric: str) -> str:
    low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
    if low is None or pd.isna(low):
        return _number(row[metric])
    return f"{_number(row[metric])} [{_number(low)}, {_number(high)}]"


def _group_name(row: pd.Series, display: dict[str, str]) -> str:
    return "**overall**" if row["grouping"] == "overall" else display.get(row["group"], row["group"])


def metrics_table(table: pd.DataFrame, metrics: list[str], display: dict[str, str]) -> list[str]:
    return markdown_table(["group", "templates", *(TITLES.get(m, m) for m in metrics)],
                          ([_group_name(row, display), row["templates"], *(_cell(row, m) for m in metrics)]
                           for _, row in table.iterrows()), numbers_from=1)


def results_markdown(table: pd.DataFrame, runs: list[Run], notes: list[str], esbbq: bool, display: dict[str, str],
                     out: Path) -> str:
    """The notes, one section per (model, prompt), then mean ± std over prompts per model when there are several."""
    lines = ["# Evaluation results", "", *notes, ""]
    for run in runs:
        block = table[(table["model"] == run.model) & (table["prompt"] == (run.prompt_id or 0))]
        warning = run_warning(run, block[block["grouping"] == "overall"].iloc[0])
        lines += [f"## {run.model}, prompt {prompt_label(run.prompt_id or 0)}", "", *_run_lines(run, out),
                  *([f"- **warning: {warning}**"] if warning else []), "",
                  *metrics_table(block, METRICS + BBQ_METRICS, display), ""]
        if esbbq:
            upstream = block[block["grouping"] != "label"]
            names = dict(zip(upstream["group"], upstream["esbbq_category"]))
            lines += ["EsBBQ's own metrics (bias_score.py; categories as the release names them):", "",
                      *metrics_table(upstream, esbbq_metrics.METRICS, names), ""]
    summary = over_prompts(table)
    several = summary[summary["prompts"] > 1]
    if len(several):
        lines += ["## Mean ± standard deviation over prompts", "",
                  "Sample standard deviation (n - 1) over the prompts scored for each model.", ""]
        for model, block in several.groupby("model", sort=False):
            rows = ([_group_name(row, display), *(f"{_number(row[m + '_mean'])} ± {_number(row[m + '_std'])}"
                                                  for m in METRICS)] for _, row in block.iterrows())
            lines += [f"### {model} ({int(block['prompts'].iloc[0])} prompts)", "",
                      *markdown_table(["group", *(TITLES[m] for m in METRICS)], rows, numbers_from=1), ""]
    return "\n".join(lines)


def settings_lines(request: ScoreRequest, release: ReleaseSamples, table_path: Path, mode: str,
                   esbbq: bool) -> list[str]:
    """How the tables were computed, written into results.md so that a number is never read without it."""
    ooc = "counted as wrong answers" if request.ooc_as_wrong else "dropped from every metric but the OOC ratio"
    pooled = ("pooled over the rows of each group (test)" if mode == "test"
              else "computed per template, templates averaged with equal weight (all)")
    lines = [*(f"- **warning: {warning}**" for warning in release.warnings),
             f"- release: `{relative_path(request.release, request.out)}` ({release.split} split); prompt table: "
             f"`{relative_path(table_path, request.out)}`",
             f"- metrics {pooled}; out-of-choice answers {ooc}; answers parsed with the {request.parser} parser",
             "- OOC, Acc amb/dis, Diff-bias amb/dis follow KoBBQ's protocol (the paper's 5_evaluation.py): "
             "diff-bias amb = biased share - counter-biased share; diff-bias dis = accuracy in contexts supporting "
             "the biased answer - accuracy in contexts supporting the counter-biased one",
             "- BBQ s_DIS, s_AMB follow BBQ's bias scores (Parrish et al., 2022), on the same answers"]
    if esbbq:
        lines.append("- acc_ambig, acc_disambig, bias_score_ambig, bias_score_disambig follow EsBBQ's bias_score.py "
                     "(langtech-bsc/EsBBQ-CaBBQ): pooled over every answer of a group whatever the mode, "
                     "disambiguated answers typed by the released question_type, ambiguous ones by answer_info and "
                     "stereotyped_groups, unknown answers neither pro- nor anti-stereotypical; each choice order "
                     "counts as an instance (results_bias_score.tsv; see tasks/evaluation/esbbq_metrics.py)")
    lines += [f"- {note}" for note in release.notes]
    if request.bootstrap:
        lines.append(f"- [low, high]: {request.bootstrap} bootstrap resamples of the templates (seed "
                     f"{request.seed}), 95% percentile interval; few templates make wide "
                     "intervals.")
    return lines


def _template_lines(table: pd.DataFrame) -> list[str]:
    """How many templates each kind of row rests on: a category figure is a small-sample figure."""
    lines = []
    for grouping, noun in (("category", "Category"), ("label", "Label")):
        counts = table.loc[table["grouping"] == grouping, "templates"]
        if len(counts):
            lines.append(f"- {noun} rows rest on {counts.min()}-{counts.max()} templates (the `templates` column).")
    lines.append("- BBQ's s_AMB equals diff-bias amb when OOC answers are dropped (both are (n_ab - n_ac) / n_a); "
                 "they differ with --ooc-as-wrong.")
    return lines


def _run_lines(run: Run, out: Path) -> list[str]:
    lines = [f"- source: `{relative_path(run.source, out)}`; {len(run.rows):,} answers, {len(run.ooc):,} "
             "out-of-choice (listed in ooc.tsv)"]
    if run.missing:
        lines.append(f"- **{len(run.missing):,} predictions missing** (scored without them; listed in missing.tsv)")
    if run.parser_disagreements is not None:
        lines.append(f"- the paper's and the strict parser read {run.parser_disagreements:,} answers differently")
    return lines


def run_warning(run: Run, overall: pd.Series) -> str | None:
    """What a reader must be told before a run's numbers (None: nothing): every answer out-of-choice (or blank), or
    overall metrics that are 0/0. A model whose output cannot be parsed scores NaN or 0, which looks like a result."""
    answers, ooc = len(run.rows), len(run.ooc)
    blank = int(run.ooc["raw"].astype(str).str.strip().eq("").sum())
    metrics = [m for m in INTERVAL_METRICS if m in overall.index]
    undefined = [TITLES[m] for m in metrics if pd.isna(overall[m])]
    if ooc < answers and not undefined:
        return None
    share = f"all {answers:,} answers are" if ooc == answers else f"{ooc:,} of {answers:,} answers are"
    effects = []
    if undefined:
        effects.append(f"{', '.join(undefined)} cannot be computed (— in the tables, NaN in the TSV files)")
    if ooc == answers and len(undefined) < len(metrics):
        effects.append(f"{'the other' if undefined else 'the'} metrics count every answer as wrong (--ooc-as-wrong)")
    return (f"{share} out-of-choice{f' ({blank:,} blank)' if blank else ''}: {'; '.join(effects)}; ooc.tsv lists "
            "what the model said")


def score_warnings(table: pd.DataFrame, runs: list[Run]) -> list[str]:
    """``run_warning`` of every run that has one, named by model and prompt."""
    overall = table[table["grouping"] == "overall"].set_index(["model", "prompt"])
    warnings = []
    for run in runs:
        warning = run_warning(run, overall.loc[(run.model, run.prompt_id or 0)])
        if warning:
            warnings.append(f"{run.model} prompt {prompt_label(run.prompt_id or 0)}: {warning}")
    return warnings


def write_outputs(out: Path, table: pd.DataFrame, runs: list[Run], notes: list[str], esbbq: bool,
                  display: dict[str, str], figures: bool = True) -> list[Path]:
    """Write every table (and the figures and results.html unless ``figures`` is off) into a staging folder,
    then move them in, results.md last: an interruption or a full disk leaves the previous outputs."""
    files: dict[str, str | bytes] = {
        "results.tsv": results_tsv(table), "results_intervals.tsv": intervals_tsv(table), "ooc.tsv": ooc_tsv(runs),
        "missing.tsv": missing_tsv(runs)}
    if esbbq:
        files["results_bias_score.tsv"] = bias_score_tsv(table)
    if figures:
        page_notes = [*(f"warning: {w}" for w in score_warnings(table, runs)), *(line[2:] for line in notes)]
        files.update(figures_and_page(table, page_notes, display))
    files["results.md"] = results_markdown(table, runs, notes, esbbq, display, out)
    with staged(out) as staging:
        for name, data in files.items():  # a full disk is named by the file (as in ``out``), not the folder
            write_bytes(staging / name, data.encode("utf-8") if isinstance(data, str) else data)
        moved = {path.name: path for path in move_in(staging, out, "results.md")}
    return [moved[name] for name in files]


@dataclass(frozen=True)
class ScoreRequest:
    """Everything `kobbq eval score` is asked; `kobbq eval run --score` builds the same."""

    release: Path
    predictions: list[Path]
    out: Path
    split: str | None = None  # None: the release's test split, or all samples when it has none
    profile: str | None = None
    prompts: Path | None = None
    prepared: Path | None = None
    prompt: int | None = None
    model: str | None = None
    mode: str | None = None
    parser: str = "paper"
    ooc_as_wrong: bool = False
    allow_missing: bool = False
    allow_modified: bool = False  # score a release that differs from its manifest (every output says so)
    bootstrap: int = 1000
    seed: int = 42
    figures: bool = True


@dataclass
class ScoreOutcome:
    table: pd.DataFrame
    runs: list[Run]
    files: list[Path]
    summary: str


def score(request: ScoreRequest) -> ScoreOutcome:
    """Score every predictions file against the release and prompt table in one pass; write every output."""
    release = read_release(request.release, request.split, request.profile, request.allow_modified)
    table_path = prepared_prompt_table(request.prepared, release) if request.prepared else resolve_prompt_table(
        release.profile, request.prompts)[0]
    prompts = read_prompt_table(table_path)
    runs = [match_submission(submission, release, prompts, request.allow_missing, request.parser)
            for path in request.predictions for submission in read_predictions(path, request.model, request.prompt)]
    mode = request.mode or release.split
    bootstrap = Bootstrap(request.bootstrap, request.seed) if request.bootstrap > 0 else None
    rows = runs_frame(runs)
    table = score_rows(rows, mode, request.ooc_as_wrong, bootstrap, by=("model", "prompt"))
    esbbq = "esbbq_category" in rows.columns  # a release in BBQ's column layout: EsBBQ's own metrics too
    if esbbq:
        table = with_esbbq_metrics(table, rows, request.ooc_as_wrong, release)
    notes = [*settings_lines(request, release, table_path, mode, esbbq), *_template_lines(table)]
    display = {c.sample_prefix: c.display for c in release.profile.categories}
    files = write_outputs(request.out, table, runs, notes, esbbq, display, request.figures)
    overall = [f"{row.model} prompt {prompt_label(row.prompt)}: OOC {row.ooc_ratio:.4f}, acc amb {row.acc_amb:.4f}, "
               f"acc dis {row.acc_dis:.4f}, diff-bias amb {row.diff_bias_amb:.4f}, diff-bias dis "
               f"{row.diff_bias_dis:.4f}" for row in table[table["grouping"] == "overall"].itertuples(index=False)]
    summary = [*(f"warning: {w}" for w in release.warnings), *overall,
               *(f"warning: {w}" for w in score_warnings(table, runs)),
               f"wrote {request.out}/results.md and {len(files) - 1} other file(s)"]
    return ScoreOutcome(table, runs, files, "\n".join(summary))


def with_esbbq_metrics(table: pd.DataFrame, rows: pd.DataFrame, ooc_as_wrong: bool,
                       release: ReleaseSamples) -> pd.DataFrame:
    """The table with EsBBQ's own metrics on its overall and category rows (``esbbq_category``: the category as
    the release names it); label rows have none, as upstream has no label grouping."""
    upstream = esbbq_metrics.score(rows, ooc_as_wrong)
    prefixes = {c.name: c.sample_prefix for c in release.profile.categories}
    upstream = upstream.assign(esbbq_category=upstream["group"].where(upstream["grouping"] == "category", ""),
                               group=upstream["group"].map(lambda name: prefixes.get(name, name)))
    keys = ["model", "prompt", "grouping", "group"]
    merged = table.merge(upstream[[*keys, "esbbq_category", *esbbq_metrics.METRICS]], on=keys, how="left")
    return merged.assign(esbbq_category=merged["esbbq_category"].fillna(""))


def prepared_prompt_table(prepared: Path, release: ReleaseSamples) -> Path:
    """The prompt table copied into a prepared folder, which must be of this release (profile, split, samples)."""
    path = prepared / SUMMARY
    summary = read_summary(prepared)
    for key, ours in (("profile", release.profile.name), ("split", release.split), ("release_name", release.name)):
        if summary.get(key) != ours:
            raise UserError(f"prepared for {key} {summary.get(key)!r}, but the release to score has {ours!r}",
                            Location(str(path), None, key))
    if summary.get("samples_sha256") not in (None, release.samples_sha256):
        raise UserError(f"prepared from another build of {release.path.name} (its sha256 differs): prepare again "
                        "from this release, or score against the release it was prepared from",
                        Location(str(path), None, "samples_sha256"))
    return prepared / PREPARED_PROMPTS


# --- figures and results.html -----------------------------------------------------------------

# context, its name, and the (accuracy, diff-bias) pairs a model can reach: a triangle (amb) or a diamond (dis)
CONTEXTS = (("amb", "ambiguous", "|diff-bias| <= 1 - acc", [(0.0, -1.0), (1.0, 0.0), (0.0, 1.0)]),
            ("dis", "disambiguated", "|diff-bias| <= 2 min(acc, 1 - acc)",
             [(0.0, 0.0), (0.5, 1.0), (1.0, 0.0), (0.5, -1.0)]))


def _pyplot():
    """pyplot on the Agg backend, with settings that make SVG and PNG bytes the same run after run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9})  # text stays text, no glyph ids to repeat
    return plt


def accuracy_bias_figure(table: pd.DataFrame):
    """Accuracy against diff-bias per context, every (model, prompt) overall, inside the feasible region."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    overall = table[table["grouping"] == "overall"]
    models = list(dict.fromkeys(overall["model"]))
    markers = "osD^v<>Ph*X"
    for axis, (context, title, bound, region) in zip(axes, CONTEXTS):
        axis.add_patch(plt.Polygon(region, closed=True, facecolor="#e8eef7", edgecolor="#9db3d6"))
        for index, model in enumerate(models):
            runs = overall[overall["model"] == model]
            for number, row in enumerate(runs.itertuples(index=False)):
                axis.scatter(getattr(row, f"acc_{context}"), getattr(row, f"diff_bias_{context}"),
                             color=f"C{index % 10}", marker=markers[number % len(markers)], s=28,
                             label=f"{model} p{prompt_label(row.prompt)}")
        axis.axhline(0, color="#888", linewidth=0.6)
        axis.set(xlim=(-0.02, 1.02), ylim=(-1.05, 1.05), xlabel=f"accuracy ({title})", ylabel=f"diff-bias ({title})",
                 title=f"{title.capitalize()} contexts\nshaded, feasible: {bound}")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=7, frameon=False)
    figure.tight_layout(rect=(0, 0.06 + 0.03 * ((len(labels) - 1) // 5), 1, 1))
    return figure


def category_figure(table: pd.DataFrame, display: dict[str, str]):
    """Diff-bias per category and context, one bar per model: a single prompt with its bootstrap interval,
    several prompts as mean with +- one standard deviation over prompts."""
    plt = _pyplot()
    categories = table[table["grouping"] == "category"]
    groups = list(dict.fromkeys(categories["group"]))
    models = list(dict.fromkeys(categories["model"]))
    figure, axes = plt.subplots(1, 2, figsize=(11, 0.35 * len(groups) * max(1, len(models)) ** 0.5 + 1.8),
                                sharey=True)
    height = 0.8 / max(1, len(models))
    for axis, (context, title, _, _) in zip(axes, CONTEXTS):
        metric = f"diff_bias_{context}"
        reach = 0.1  # the x range: the widest bar or error bar, between +-0.1 and +-1
        for index, model in enumerate(models):
            values, low, high = _bar_values(categories[categories["model"] == model], groups, metric)
            positions = [g + index * height for g in range(len(groups))]
            axis.barh(positions, values, height=height, color=f"C{index % 10}", label=model,
                      xerr=[low, high], error_kw={"elinewidth": 0.7, "capsize": 1.5})
            reach = max([reach, *(abs(v - d) for v, d in zip(values, low)),
                         *(abs(v + u) for v, u in zip(values, high))])
        axis.axvline(0, color="#444", linewidth=0.6)
        limit = min(1.0, reach * 1.15) if reach == reach else 1.0
        axis.set(xlim=(-limit, limit), title=f"Diff-bias, {title} contexts", xlabel="diff-bias")
    axes[0].set_yticks([g + 0.4 - height / 2 for g in range(len(groups))],
                       [f"{display.get(g, g)} (n={int(categories.loc[categories['group'] == g, 'templates'].iloc[0])})"
                        for g in groups])
    axes[0].invert_yaxis()
    axes[1].legend(fontsize=7, frameon=False, loc="lower right")
    figure.tight_layout()
    return figure


def _bar_values(rows: pd.DataFrame, groups: list[str], metric: str) -> tuple[list[float], list[float], list[float]]:
    """Bar length and error bar below/above, per category."""
    values, low, high = [], [], []
    for group in groups:
        block = rows[rows["group"] == group]
        mean = float(block[metric].mean())
        if len(block) == 1 and f"{metric}_low" in block.columns and not pd.isna(block[f"{metric}_low"].iloc[0]):
            below, above = mean - float(block[f"{metric}_low"].iloc[0]), float(block[f"{metric}_high"].iloc[0]) - mean
        else:
            below = above = float(block[metric].std()) if len(block) > 1 else 0.0
        values.append(mean)
        low.append(max(below, 0.0))
        high.append(max(above, 0.0))
    return values, low, high


def results_html(notes: list[str], table: pd.DataFrame, svgs: dict[str, str], display: dict[str, str]) -> str:
    """One offline page: the figures inline (SVG) and every run's table; no script, no external file. The notes are
    results.md's, their Markdown rendered (raw HTML in them escaped)."""
    import html

    from markdown_it import MarkdownIt

    sections = []
    for (model, prompt), block in table.groupby(["model", "prompt"], sort=False):
        shown = block.assign(group=[display.get(g, g) for g in block["group"]])
        columns = ["group", "templates", "rows", *METRICS, *BBQ_METRICS]
        sections.append(f"<h2>{html.escape(str(model))}, prompt {prompt_label(prompt)}</h2>"
                        + shown[columns].to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="—",
                                                  border=0, classes="results"))
    inline = MarkdownIt("commonmark", {"html": False}).renderInline
    settings = "".join(f"<li>{inline(note)}</li>" for note in notes)
    figures = "".join(f"<figure>{svg[svg.index('<svg'):]}<figcaption>{html.escape(caption)}</figcaption></figure>"
                      for caption, svg in svgs.items())
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table.results{border-collapse:collapse;font-size:13px}table.results td,table.results th"
             "{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}figure{margin:1em 0}"
             "figure svg{max-width:100%;height:auto}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Evaluation results</title>"
            f"<style>{style}</style></head><body><h1>Evaluation results</h1><ul>{settings}</ul>{figures}"
            + "".join(sections) + "</body></html>\n")


def figures_and_page(table: pd.DataFrame, notes: list[str], display: dict[str, str]) -> dict[str, str | bytes]:
    """File name -> content of the two figures (PNG, SVG) and of results.html."""
    figures = {"accuracy_bias": ("Accuracy against diff-bias per context (overall, every model and prompt)",
                                 accuracy_bias_figure(table)),
               "categories": ("Diff-bias per category (n = templates behind each figure). Error bars: the "
                              "bootstrap 95% interval for a model scored on one prompt, +- one standard deviation "
                              "over prompts for a model scored on several", category_figure(table, display))}
    files: dict[str, str | bytes] = {}
    svgs = {}
    for stem, (caption, figure) in figures.items():  # tasks.audit.charts.saved: byte-stable, SVG ids its own
        rendered = {kind: saved(figure, stem, kind, dpi=150) for kind in ("png", "svg")}
        _pyplot().close(figure)
        files.update({f"{stem}.{kind}": data for kind, data in rendered.items()})
        svgs[caption] = rendered["svg"].decode("utf-8")
    files["results.html"] = results_html(notes, table, svgs, display)
    return files
