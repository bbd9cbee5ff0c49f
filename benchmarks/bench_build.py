"""Benchmark of the build on the real KoBBQ templates; prints its figures.

    .venv/bin/python benchmarks/bench_build.py [--templates ../shared/data/kobbq/KoBBQ_templates.tsv]

1. Expansion only (best of N runs): samples per second, all at once and chunk by chunk of template
   rows as the build writes them (``ExpandedRelease.chunks``).
2. A straightforward row-by-row pandas expansion, written here for comparison (regex
   substitution per fill, one dict per sample, one DataFrame at the end), timed on the same
   templates; it must produce the same samples, and the ratio is printed.
3. The full ``kobbq build`` as a separate process, direct (``--templates``) and through every
   stage of the real-data pipeline (``--pipeline``): wall time split into start-up (Python,
   Prefect's ephemeral API) and pipeline work, peak RSS, and a re-run with nothing changed.
"""

from __future__ import annotations

import os

import argparse
import itertools
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.paths import DEFAULT_CORRECTIONS  # noqa: E402
from core.profile import load_profile  # noqa: E402
from tasks.templates.validate import load_checked  # noqa: E402
from tasks.release.assemble import expand_release  # noqa: E402
from tasks.templates.kobbq_format import expand_templates  # noqa: E402

os.environ.setdefault("KOBBQ_PREFECT_SERVER", "temporary")  # its builds leave no Prefect server running

INLINE = re.compile(r"\[([A-Z]+[0-9]*):([^\]]*)\]")
PROGRESS = re.compile(r"^\[\s*([0-9.]+)s\] (.*)$")


def _declarations(cell: str) -> dict[str, list[str]]:
    return {m.group(1): [x.strip() for x in m.group(2).split(",")]
            for m in re.finditer(r"([A-Z]+[0-9]*):\s*\[([^\]]*)\]", cell)}


def naive_expand(rows: pd.DataFrame, profile) -> pd.DataFrame:
    """Row by row over a DataFrame of template rows, fill by fill: what one would write first.

    Used only as the baseline and as an independent cross-check of the engine's output.
    """
    unknown = profile.release.unknown_expression
    records = []
    for _, row in rows.iterrows():
        names, lexical_slots = _declarations(row["Names"]), _declarations(row["Lexical_diversity"])
        slots = {**names, **lexical_slots}
        lexical = sorted(lexical_slots, key=lambda n: (n.rstrip("0123456789"),
                                                       int(n[len(n.rstrip("0123456789")):] or 0)))
        swapped = row["version"] in profile.templates.swapped_versions
        order = (["N2", "N1"] if swapped else ["N1", "N2"]) + lexical
        if swapped and "X1" in lexical and "X2" in lexical:
            i, j = order.index("X1"), order.index("X2")
            order[i], order[j] = order[j], order[i]
        prefix = profile.category(row["Category"]).sample_prefix
        bbq_id = "" if row["BBQ_id"] == "N/A" else row["BBQ_id"]
        bbq_category = "" if row["BBQ_category"] == "N/A" else row["BBQ_category"]
        for number, combo in enumerate(itertools.product(*(range(len(slots[s])) for s in order)), start=1):
            chosen = dict(zip(order, combo))

            def fill(text: str) -> str:
                filled = INLINE.sub(lambda m: [x.strip() for x in m.group(2).split(",")][chosen[m.group(1)]], text)
                return re.sub(r" +", " ", filled).strip()

            amb = fill(row["Ambiguous_context"])
            dis = amb + " " + fill(row["Disambiguating_context"])
            ans_b, ans_c = fill(row["Biased_question_answer"]), fill(row["Counter-biased_question_answer"])
            counter = row["version"] in profile.templates.counter_biased_versions
            choices = repr([ans_b, ans_c, unknown])
            for context_kind, context in (("amb", amb), ("dis", dis)):
                for question_kind, column, answer, biased in (
                        ("bsd", "Biased_question", ans_b, ans_c if counter else ans_b),
                        ("cnt", "Counter-biased_question", ans_c, ans_b if counter else ans_c)):
                    records.append({
                        "sample_id": f"{prefix}-{int(row['ID']):03d}{row['version']}-{number:03d}-"
                                     f"{context_kind}-{question_kind}",
                        "label_annotation": row["Label_annotation"], "context": context,
                        "question": fill(row[column]), "choices": choices, "biased_answer": biased,
                        "answer": unknown if context_kind == "amb" else answer,
                        "bbq_id": bbq_id, "bbq_category": bbq_category, "prediction": ""})
    return pd.DataFrame.from_records(records)


def best_of(runs: int, function):
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def full_build(arguments: list[str], started_marker: str = "build flow started") -> dict[str, float]:
    """Run ``kobbq build ARGUMENTS`` twice in a new folder: a full build, then a re-run with nothing changed."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        process = subprocess.run([sys.executable, "-m", "kobbq", "build", *arguments, "--out", out, "--force"],
                                 cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        rerun_start = time.perf_counter()
        rerun = subprocess.run([sys.executable, "-m", "kobbq", "build", *arguments, "--out", out],
                               cwd=ROOT, capture_output=True, text=True)
        rerun_wall = time.perf_counter() - rerun_start
    if process.returncode != 0 or rerun.returncode != 0:
        raise SystemExit(f"kobbq build failed:\n{process.stderr}\n{rerun.stderr}")
    steps = {message: float(seconds) for seconds, message in
             (PROGRESS.match(line).groups() for line in process.stderr.splitlines() if PROGRESS.match(line))}
    started = next(v for k, v in steps.items() if k.startswith(started_marker))
    published = next(v for k, v in steps.items() if k.startswith("validated and published"))
    checks = next((line for line in process.stderr.splitlines() if "release checks:" in line), "")
    validation = float(re.search(r"in ([0-9.]+) s", checks).group(1)) if checks else float("nan")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"wall": wall, "startup": started, "pipeline": published - started, "rest": wall - published,
            "validation": validation, "peak_rss_mb": peak_kib / 1024, "rerun_wall": rerun_wall,
            "rerun_skipped": "up to date" in rerun.stderr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--templates", type=Path, default=ROOT.parent / "shared/data/kobbq/KoBBQ_templates.tsv")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-build", action="store_true", help="only the in-process expansion figures")
    args = parser.parse_args()

    profile = load_profile("ko")
    loaded, _ = load_checked(args.templates, DEFAULT_CORRECTIONS, profile)
    templates = loaded.templates
    seconds, expansion = best_of(args.runs, lambda: expand_templates(templates, profile))
    samples = len(expansion)
    print(f"templates: {args.templates.name}, {len(templates)} rows -> {samples:,} samples")
    print(f"expansion (best of {args.runs}): {seconds * 1000:.1f} ms, {samples / seconds:,.0f} samples/s")
    release = expand_release(templates, profile, profile.release.seed)
    chunked, count = best_of(args.runs, lambda: sum(len(chunk) for chunk, _ in release.chunks()))
    print(f"chunk by chunk (at most {release.chunk_samples:,} samples a chunk, best of {args.runs}): "
          f"{chunked * 1000:.1f} ms for {count:,} samples")

    # The baseline starts from the same corrected, normalised cells, as a DataFrame.
    rows = pd.DataFrame([t.columns for t in templates])
    naive_seconds, naive = best_of(1, lambda: naive_expand(rows, profile))
    ours = pd.DataFrame({k: list(v) for k, v in expansion.columns.items()})
    same = naive.equals(ours)
    print(f"row-by-row pandas baseline: {naive_seconds:.2f} s, {len(naive) / naive_seconds:,.0f} samples/s; "
          f"same samples: {same}; speed-up {naive_seconds / seconds:.0f}x")
    if not same:
        raise SystemExit("the baseline and the engine disagree: investigate before trusting either")

    if not args.skip_build:
        report("kobbq build --templates (direct)", full_build(["--templates", str(args.templates)]))
        pipeline = ROOT / "templates_raw" / "real" / "kobbq_release.toml"
        report("kobbq build --pipeline (real data, every stage)",
               full_build(["--pipeline", str(pipeline)], started_marker="pipeline flow started"))


def report(what: str, figures: dict[str, float]) -> None:
    print(f"{what}, separate process, --force: {figures['wall']:.1f} s wall = "
          f"{figures['startup']:.1f} s start-up (imports, Prefect ephemeral API) "
          f"({figures['startup'] / figures['wall']:.0%}) + {figures['pipeline']:.1f} s pipeline work "
          f"(of which {figures['validation']:.1f} s release validation) + {figures['rest']:.1f} s shutdown")
    print(f"  peak RSS of the largest process of the run (build, validation child, Prefect server): "
          f"{figures['peak_rss_mb']:.0f} MB")
    skipped = "release found up to date, nothing rebuilt" if figures["rerun_skipped"] else "REBUILT"
    print(f"  re-run with nothing changed: {figures['rerun_wall']:.1f} s wall ({skipped})")


if __name__ == "__main__":
    main()
