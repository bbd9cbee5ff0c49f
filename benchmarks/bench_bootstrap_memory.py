"""Peak memory of `kobbq eval score --bootstrap N`: it must not grow with N.

    .venv/bin/python benchmarks/bench_bootstrap_memory.py [--resamples 1000 100000 1000000] [--runs 1]
        [--example build/KoBBQ] [--real build/real/KoBBQ]

For each release (the embedded example's 24-sample test split; the real KoBBQ test split, 2,280
samples, built from ``../shared/data`` into a temporary folder when ``--real`` is not given) it
prepares prompt 1, writes seeded random answers (a tenth out of choice), and runs `kobbq eval score
--no-figures` in a child process for each N, printing the child's peak resident memory (the
kernel's ``ru_maxrss``) and its wall time: medians of ``--runs`` runs. `--bootstrap 0` is the
baseline (no intervals).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KOBBQ_PREFECT_SERVER", "temporary")  # its builds leave no Prefect server running

ROOT = Path(__file__).resolve().parent.parent
KOBBQ = [sys.executable, "-m", "kobbq"]
REAL_TEMPLATES = ROOT.parent / "shared" / "data" / "kobbq" / "KoBBQ_templates.tsv"


def kobbq(*args: str) -> None:
    subprocess.run([*KOBBQ, *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def random_answers(prepared: Path, out: Path, seed: int = 0) -> Path:
    """One answer per request: a random letter, or (a tenth) text that is none of the choices."""
    chooser = random.Random(seed)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sample_id", "prediction", "prompt_id"])
        for line in (prepared / "requests.jsonl").read_text(encoding="utf-8").splitlines():
            request = json.loads(line)
            answer = "모르겠다" if chooser.random() < 0.1 else chooser.choice("ABC")
            writer.writerow([request["id"], answer, request["prompt_id"]])
    return out


def peak_score(release: Path, prepared: Path, answers: Path, resamples: int, out: Path) -> tuple[float, float]:
    """Peak RSS (MB) and wall seconds of one `kobbq eval score` child."""
    began = time.perf_counter()
    child = subprocess.Popen([*KOBBQ, "eval", "score", "--release", str(release), "--prepared", str(prepared),
                              str(answers), "--bootstrap", str(resamples), "--no-figures", "--out", str(out)],
                             cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kobbq eval score --bootstrap {resamples} failed (exit {os.waitstatus_to_exitcode(status)})")
    return usage.ru_maxrss / 1024, time.perf_counter() - began


def real_release(folder: Path) -> Path:
    kobbq("build", "--profile", "ko", "--templates", str(REAL_TEMPLATES), "--out", str(folder))
    return folder / "KoBBQ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, nargs="+", default=[0, 1000, 100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--example", type=Path, default=None, help="the example's release (default: built here)")
    parser.add_argument("--real", type=Path, default=None, help="the real KoBBQ release (default: built here)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kobbq-bench-boot-") as scratch:
        work = Path(scratch)
        if args.example is None:
            kobbq("build", "--out", str(work / "example"))
        releases = {"example (24 samples)": args.example or work / "example" / "KoBBQ",
                    "real KoBBQ (2,280 samples)": args.real or real_release(work / "real")}
        print(f"{'release':28} {'--bootstrap':>12} {'peak RSS MB':>12} {'wall s':>8}")
        for name, release in releases.items():
            prepared = work / f"prepared-{len(name)}"
            kobbq("eval", "prepare", "--release", str(release), "--prompt-ids", "1", "--out", str(prepared))
            answers = random_answers(prepared, work / f"answers-{len(name)}.csv")
            for resamples in args.resamples:
                figures = [peak_score(release, prepared, answers, resamples, work / "scores") for _ in range(args.runs)]
                print(f"{name:28} {resamples:>12,} {statistics.median(f[0] for f in figures):>12.0f} "
                      f"{statistics.median(f[1] for f in figures):>8.1f}", flush=True)


if __name__ == "__main__":
    main()
