"""``kobbq eval``: prepare prompts for a release, score model predictions, compare results.

``run`` and ``export-lm-eval`` (running models) are registered from ``kobbq.commands._eval_run``
when that module is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from core import interrupt
from core.atomic import check_writable, write_text
from core.paths import DEFAULT_BUILD_DIR
from kobbq.arguments import NOT_NEGATIVE, POSITIVE, add_profile, add_prompt_selection, add_prompt_table, release_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate models on a release: prepare prompts, score predictions, compare results",
        description="The paper's evaluation protocol: every prompt of the prompt table the release's profile "
                    "names, 3 choice orders per sample, out-of-choice answers counted and dropped, accuracy and "
                    "diff-bias in ambiguous and disambiguated contexts.")
    eval_subparsers = parser.add_subparsers(dest="eval_command", metavar="STEP", required=True)
    _register_prepare(eval_subparsers)
    _register_score(eval_subparsers)
    _register_compare(eval_subparsers)
    if importlib.util.find_spec("kobbq.commands._eval_run") is not None:
        importlib.import_module("kobbq.commands._eval_run").register(eval_subparsers)


def _add_release(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--release", type=Path, default=None,
                        help="release folder written by `kobbq build` (default: build/<the profile's release name>; "
                             "without --profile, build/KoBBQ-example), or a published release as downloaded "
                             "(KoBBQ's data/ folder, EsBBQ's per-category files) with --profile")
    parser.add_argument("--split", choices=("test", "all"), default=None,
                        help="which sample file: the test split (the paper's) or all samples (default: test; all for "
                             "a release without a test split, such as EsBBQ)")
    add_profile(parser,
                help="expected profile, refused when the release was built with another one; the culture of a "
                     "published release folder without manifest.json")
    add_prompt_table(parser)
    parser.add_argument("--allow-modified", action="store_true",
                        help="evaluate a release whose files differ from its manifest (edited or damaged since it "
                             "was built) as it is, with a warning in every output; refused without it")


def _register_prepare(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prepare", help="write the model requests: every sample x prompt x 3 choice orders",
        description="Write OUT/requests.jsonl (one request per prompt, sample and choice order, ids "
                    "<sample_id>-0/-1/-2), OUT/prepared.json, and the upstream layout "
                    "(OUT/<Release>_<split>/<Release>_<split>_evaluation_<N>.tsv and .json) for existing "
                    "inference scripts. The release's unknown choice becomes each prompt's unknown wording.")
    _add_release(parser)
    add_prompt_selection(parser, "--prompt-ids", dest="prompt_ids", nargs="+")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the requests into")
    parser.set_defaults(handler=run_prepare)


def run_prepare(args: argparse.Namespace) -> int:
    # The evaluation package (pandas, pyarrow): not for --help.
    from tasks.evaluation.prompts import prepare_release

    check_writable(args.out, create=False)  # a read-only folder: one line now, not after the release is read
    interrupt.leaves(f"{args.out} is as it was before (a preparation is moved in only once complete)")
    prepared = prepare_release(release_of(args), args.out, args.split, args.profile,
                               args.prompts, args.prompt_ids, args.allow_modified)
    print("\n".join([*(f"warning: {w}" for w in prepared.warnings), *prepared.notes]))
    print(f"{args.out}: {prepared.requests:,} requests ({prepared.samples:,} samples x 3 orders x "
          f"{prepared.prompts} prompt(s)) in requests.jsonl")
    return 0


def _register_score(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score", help="score predictions: results.tsv, intervals, results.md, ooc.tsv, plots, results.html",
        description="Score prediction files against a release. Accepted: the upstream processed TSV "
                    "(sample_id-0/-1/-2, prediction = choice text), the upstream raw TSV (guid, raw; model text "
                    "parsed with the paper's cascade), a CSV sample_id,prediction (choice text, or a letter for a "
                    "suffixed ID), JSONL with those fields, the answers.jsonl of `kobbq eval run`, and "
                    "lm-evaluation-harness --log_samples files of an exported task.")
    _add_release(parser)
    parser.add_argument("predictions", type=Path, nargs="+", metavar="PREDICTIONS", help="prediction files")
    parser.add_argument("--prepared", type=Path, default=None,
                        help="the prepared folder the answers were made from (its prompt table is used; without "
                             "--release, the release its prepared.json names)")
    parser.add_argument("--prompt", type=POSITIVE, default=None, metavar="ID",
                        help="prompt id of files that do not say it (file name raw_p<ID> / ..._evaluation_<ID>_...)")
    parser.add_argument("--model", default=None, help="model name (default: from the rows, the file or folder name)")
    parser.add_argument("--mode", choices=("test", "all"), default=None,
                        help="test: pool the rows of a group; all: average per-template metrics (default: the split)")
    parser.add_argument("--parser", choices=("paper", "strict"), default="paper",
                        help="how model text becomes a choice (default: the paper's cascade)")
    parser.add_argument("--ooc-as-wrong", action="store_true",
                        help="count out-of-choice answers as wrong instead of dropping them")
    parser.add_argument("--allow-missing", action="store_true",
                        help="score runs with missing predictions (counted and listed in missing.tsv)")
    parser.add_argument("--bootstrap", type=resamples, default=1000, metavar="N",
                        help="bootstrap resamples of templates for the intervals (0: none; default: %(default)s; at "
                             f"most {MAX_RESAMPLES:,})")
    parser.add_argument("--seed", type=NOT_NEGATIVE, default=42, help="bootstrap seed (default: %(default)s)")
    parser.add_argument("--no-figures", action="store_true", help="tables only: no PNG/SVG figures, no results.html")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR / "evaluation",
                        help="output folder (default: %(default)s)")
    parser.set_defaults(handler=run_score)


MAX_RESAMPLES = 100_000  # ~2 s more than the default on the example; 10^8 ran for minutes without a line


def resamples(text: str) -> int:
    """A number of bootstrap resamples: a whole number from 0 to ``MAX_RESAMPLES``."""
    value = NOT_NEGATIVE(text)
    if value > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RESAMPLES}, not {value} (more resamples only narrow "
                                         "the bounds' own noise, and each one costs time per group scored)")
    return value


def run_score(args: argparse.Namespace) -> int:
    # The evaluation package (pandas, matplotlib): not for --help.
    from tasks.evaluation.report import ScoreRequest, score

    check_writable(args.out, create=False)  # a read-only folder: one line now, not after the scoring
    interrupt.leaves(f"the result files in {args.out} are the previous ones (the new ones are moved in only once "
                     "all are written)")
    request = ScoreRequest(release=release_of(args, args.prepared), split=args.split,
                           predictions=list(args.predictions), profile=args.profile, prompts=args.prompts,
                           prepared=args.prepared, prompt=args.prompt, model=args.model, mode=args.mode, parser=args.parser, ooc_as_wrong=args.ooc_as_wrong,
                           allow_missing=args.allow_missing, allow_modified=args.allow_modified,
                           bootstrap=args.bootstrap, seed=args.seed, out=args.out,
                           figures=not args.no_figures)
    outcome = score(request)
    print(outcome.summary)
    return 0


def _register_compare(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="put several scored models/prompts side by side (mean ± std over prompts)",
        description="Read the results_intervals.tsv of one or more `kobbq eval score` outputs, or published results "
                    "tables in the upstream layout (5_evaluation.py's KoBBQ_test_<N>.tsv: model, category, "
                    "out-of-choice ratio, ...; their models are marked '(published)'), and print, per group "
                    "(overall, labels, categories), each model's mean ± sample standard deviation over its prompts "
                    "(the number of prompts in brackets); a model scored on one prompt shows its bootstrap "
                    "interval where there is one.")
    parser.add_argument("results", type=Path, nargs="+", metavar="RESULTS",
                        help="score output folders, their results_intervals.tsv or results.tsv, or published "
                             "results tables")
    parser.add_argument("--metrics", nargs="+", default=None, metavar="NAME",
                        help="ooc_ratio acc_amb acc_dis diff_bias_amb diff_bias_dis s_dis s_amb, and for EsBBQ/CaBBQ "
                             "acc_ambig acc_disambig bias_score_ambig bias_score_disambig (default: the first 5)")
    parser.add_argument("--out", type=Path, default=None, help="also write compare.md and compare.tsv here")
    parser.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    # The evaluation package (pandas): not for --help.
    from tasks.evaluation.compare import comparison, comparison_markdown, comparison_tsv, metric_names, read_results

    if args.out is not None:
        check_writable(args.out, create=False)
    table = comparison(read_results(args.results), metric_names(args.metrics))
    text = comparison_markdown(table)
    if args.out is not None:
        write_text(args.out / "compare.tsv", comparison_tsv(table))
        write_text(args.out / "compare.md", text)
    print(text, end="")
    return 0
