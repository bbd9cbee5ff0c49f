"""How the build's costs grow with the release: the real templates replicated k times.

    .venv/bin/python benchmarks/bench_scale.py [--k 1 10] [--k 50] [--runs 1] [--keep]

For each k, the real KoBBQ templates are written k times into one TSV, copy c with every
template ID raised by c x ID_STRIDE (the real IDs go up to 44, so copies never collide), and
the profile's corrections are replicated the same way: a correction names its row by
``Category|ID|version``, so each copy gets the correction of its original, with the new ID. The
file is named ``KoBBQ_templates_xK.tsv`` so the corrections' file pattern (``KoBBQ_templates*.tsv``)
matches it; the benchmark checks that k x the real number of corrections were applied.

Each k is built with ``kobbq build --templates FILE --corrections FILE --test-split seeded --force`` in a new
process (the copies' IDs are not in the ko profile's official test split).
Printed per k (medians over --runs):

- samples;
- wall time split by the build's own progress lines (stderr, seconds since the command started):
  loading (imports, the templates read, validated and counted: until "expansion: N samples", before the
  flow run starts), start-up (Prefect's API, until "flow started"), expanding and writing the sample files
  (chunk by chunk of template rows: the staged Parquet, then TSV and JSONL, until "sample files
  written"), the wait for validation after the writes, and the rest (reports, manifest, audit,
  publication, shutdown);
- validation: the release checks' own time ("release checks: ... in X s"), from the moment the Parquet
  files are staged: the checks run in a child process started with the command (it imports Great
  Expectations meanwhile), alongside the TSV/JSONL writes;
- peak RSS of the largest process: every 50 ms the benchmark reads VmHWM (the kernel's peak
  resident set, so a peak between two polls is not missed while the process lives) from
  /proc/PID/status of the build and all its descendants; a process's last reading is at most
  50 ms before it ends. Reported per role: the build itself, the validation child, Prefect's
  API server (any other descendant).

Growth ratios are against k = 1.
"""

from __future__ import annotations

import os

import argparse
import csv
import io
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("KOBBQ_PREFECT_SERVER", "temporary")  # its builds leave no Prefect server running

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT.parent / "shared/data/kobbq/KoBBQ_templates.tsv"
CORRECTIONS = ROOT / "core/profiles/ko/corrections.csv"
ID_STRIDE = 50
POLL_SECONDS = 0.05
PROGRESS = re.compile(r"^\[\s*([0-9.]+)s\] (.*)$")


def replicate_templates(source: Path, k: int, out: Path) -> Path:
    """The template file k times, copy c with IDs + c x ID_STRIDE; one line per row (the real file has none
    spanning lines)."""
    header, *rows = source.read_text(encoding="utf-8").rstrip("\n").split("\n")
    id_column = header.split("\t").index("ID")
    lines = [header]
    for copy in range(k):
        for row in rows:
            cells = row.split("\t")
            if int(cells[id_column]) >= ID_STRIDE:
                raise SystemExit(f"template ID {cells[id_column]} >= the stride {ID_STRIDE}: raise ID_STRIDE")
            cells[id_column] = str(int(cells[id_column]) + copy * ID_STRIDE)
            lines.append("\t".join(cells))
    path = out / f"KoBBQ_templates_x{k}.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def replicate_corrections(source: Path, k: int, out: Path) -> Path:
    """Every correction once per copy, its row key (Category|ID|version) moved to the copy's ID."""
    with source.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for copy in range(k):
        for row in rows:
            category, template_id, version = row["row_key"].split("|")
            writer.writerow({**row, "row_key": f"{category}|{int(template_id) + copy * ID_STRIDE}|{version}"})
    path = out / f"corrections_x{k}.csv"
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def _descendants(pid: int) -> list[int]:
    children = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return []
    return children + [d for child in children for d in _descendants(child)]


def _peak_and_role(pid: int) -> tuple[int, str] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    if not match:
        return None
    role = "validation" if "tasks.release.checks" in command else "server"
    return int(match.group(1)), role


@dataclass
class Run:
    samples: int
    corrections: int
    wall: float
    startup: float
    loading: float
    writing: float
    validation_wait: float
    rest: float
    validation: float
    peak_mb: dict[str, float]


def build_once(templates: Path, corrections: Path, out: Path) -> Run:
    # The copies' template IDs are not in the ko profile's official test split: one fill per row, seeded, as before.
    command = [sys.executable, "-m", "kobbq", "build", "--templates", str(templates), "--corrections",
               str(corrections), "--test-split", "seeded", "--out", str(out), "--force"]
    peaks = {"build": 0, "validation": 0, "server": 0}
    with tempfile.TemporaryFile(mode="w+") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        while process.poll() is None:
            reading = _peak_and_role(process.pid)
            if reading:
                peaks["build"] = max(peaks["build"], reading[0])
            for child in _descendants(process.pid):
                reading = _peak_and_role(child)
                if reading:
                    peaks[reading[1]] = max(peaks[reading[1]], reading[0])
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - start
        stderr.seek(0)
        log = stderr.read()
    if process.returncode != 0:
        raise SystemExit(f"kobbq build failed ({process.returncode}):\n{log[-4000:]}")
    steps = [(float(s), message) for s, message in (PROGRESS.match(line).groups()
                                                    for line in log.splitlines() if PROGRESS.match(line))]

    def at(prefix: str) -> float:
        return next(seconds for seconds, message in steps if message.startswith(prefix))

    samples = int(re.search(r"expansion: ([0-9,]+) samples", log).group(1).replace(",", ""))
    corrections_applied = int(re.search(r"\((\d+) correction\(s\) applied", log).group(1))
    validation = float(re.search(r"release checks: .* in ([0-9.]+) s", log).group(1))
    written, checked, started = at("sample files written"), at("release checks:"), at("flow started")
    # The templates are read, checked and counted (until "expansion:") before the flow run starts.
    return Run(samples, corrections_applied, wall, startup=started - at("expansion:"), loading=at("expansion:"),
               writing=written - started, validation_wait=max(0.0, checked - written),
               rest=wall - max(written, checked), validation=validation,
               peak_mb={role: kib / 1024 for role, kib in peaks.items()})


def median_run(runs: list[Run]) -> Run:
    def med(name: str) -> float:
        return statistics.median(getattr(r, name) for r in runs)

    return Run(runs[0].samples, runs[0].corrections, *(med(n) for n in (
        "wall", "startup", "loading", "writing", "validation_wait", "rest", "validation")),
        peak_mb={role: statistics.median(r.peak_mb[role] for r in runs) for role in runs[0].peak_mb})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 10], help="replication factors (1 is always run)")
    parser.add_argument("--runs", type=int, default=1, help="builds per k; medians are printed")
    parser.add_argument("--templates", type=Path, default=TEMPLATES)
    parser.add_argument("--keep", type=Path, help="build into this folder instead of a temporary one")
    args = parser.parse_args()
    factors = sorted({1, *args.k})
    results: dict[int, Run] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        for k in factors:
            templates = replicate_templates(args.templates, k, work)
            corrections = replicate_corrections(CORRECTIONS, k, work)
            results[k] = median_run([build_once(templates, corrections, work / f"build_x{k}")
                                     for _ in range(args.runs)])
            print_run(k, results[k], results[1], args.runs)
    if results[1].corrections * max(factors) != results[max(factors)].corrections:
        raise SystemExit("the replicated corrections were not all applied: the copies differ from the original")


def print_run(k: int, run: Run, base: Run, runs: int) -> None:
    largest = max(run.peak_mb.values())
    who = max(run.peak_mb, key=run.peak_mb.get)
    print(f"k={k}: {run.samples:,} samples ({run.corrections} corrections applied), median of {runs} build(s): "
          f"{run.wall:.1f} s wall = {run.loading:.1f} loading + {run.startup:.1f} start-up + "
          f"{run.writing:.1f} expanding and writing sample files + {run.validation_wait:.1f} waiting for validation + "
          f"{run.rest:.1f} reports, publication, shutdown; validation {run.validation:.1f} s "
          f"(child process, from the staged Parquet on, alongside the writes)", flush=True)
    print(f"  peak RSS: largest process {largest:.0f} MB ({who}); build {run.peak_mb['build']:.0f} MB, "
          f"validation child {run.peak_mb['validation']:.0f} MB, Prefect server {run.peak_mb['server']:.0f} MB")
    if k != 1:
        print(f"  growth vs k=1: samples x{run.samples / base.samples:.1f}, wall x{run.wall / base.wall:.2f}, "
              f"loading x{run.loading / base.loading:.2f}, writing x{run.writing / base.writing:.2f}, "
              f"validation x{run.validation / base.validation:.2f}, largest peak RSS "
              f"x{largest / max(base.peak_mb.values()):.2f}, build peak x{run.peak_mb['build'] / base.peak_mb['build']:.2f}"
              f", validation peak x{run.peak_mb['validation'] / base.peak_mb['validation']:.2f}", flush=True)
    print(f"  validation / writing: {run.validation / run.writing:.2f}", flush=True)


if __name__ == "__main__":
    main()
