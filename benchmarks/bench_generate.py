"""Benchmark of workbook-template generation (EsBBQ, CaBBQ) on the public templates; prints its figures.

    .venv/bin/python benchmarks/bench_generate.py [--templates ../shared/data/esbbq/templates] [--runs 3]

Per profile (es, ca), medians over the runs: reading the twelve workbooks (openpyxl; the sheets
carry ~1,000 mostly blank rows each), generating every instance (flips x candidates x lexical
combinations, four instances a fill, then de-duplication), and writing the per-category CSVs;
with the instances before and after de-duplication and instances per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.profile import load_profile  # noqa: E402
from tasks.release.write import write_category_csvs  # noqa: E402
from tasks.templates.workbook_format import expand_workbook  # noqa: E402
from tasks.templates.workbook import load_workbook_templates  # noqa: E402


def measure(profile_name: str, folder: Path, runs: int) -> None:
    profile = load_profile(profile_name)
    fmt = profile.templates.workbook
    reads, generations, writes = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        loaded = load_workbook_templates(folder, profile)
        read = time.perf_counter()
        expansion = expand_workbook(loaded.templates, profile, loaded.vocabulary)
        generated = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            records = [dict(zip(expansion.columns, values)) for values in zip(*expansion.columns.values())]
            write_category_csvs(records, Path(out), "category", profile.category_names, fmt.output_columns,
                                fmt.list_columns)
        written = time.perf_counter()
        reads.append(read - started)
        generations.append(generated - read)
        writes.append(written - generated)
    kept, emitted = len(expansion), sum(expansion.row_generated or [])
    generation = statistics.median(generations)
    print(f"{profile_name}: {len(loaded.templates)} template rows -> {emitted:,} instances, {kept:,} after "
          f"de-duplication")
    print(f"  read workbooks   {statistics.median(reads):6.2f} s (median of {runs})")
    print(f"  generate         {generation:6.2f} s ({emitted / generation:,.0f} instances/s)")
    print(f"  write CSVs       {statistics.median(writes):6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=Path, default=ROOT.parent / "shared" / "data" / "esbbq" / "templates")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name in ("es", "ca"):
        measure(name, args.templates, args.runs)


if __name__ == "__main__":
    main()
