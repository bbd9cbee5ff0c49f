"""``kobbq eval``: prepare prompts for a release, run models on them, score their answers, compare results. The
evaluation package (pandas, pyarrow, matplotlib, openai) is imported by ``run_step`` when a step runs, not at the top:
``kobbq --help`` imports every command module to read its parser."""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

from core import interrupt
from core.atomic import check_writable, write_text
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR
from core.tables import delimited_text, markdown_table
from kobbq.arguments import (NOT_NEGATIVE, POSITIVE, add_profile, add_prompt_selection, add_prompt_table, http_url,
                             real_number, release_of, whole_number)
from tasks.evaluation.limits import LOST_AFTER_FLOOR, LOST_AFTER_SECONDS, REQUEST_SECONDS, STALLED_AFTER_TIMEOUTS

RUNS_DIR = DEFAULT_BUILD_DIR / "evaluation" / "runs"  # answers of eval run and import-lm-eval, <out>/<model>/


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
    _register_run(eval_subparsers)
    parser.set_defaults(handler=run_step)


def run_step(args: argparse.Namespace) -> int:
    """The step named, once the evaluation modules are imported as this module's names (one import for every step; a
    test may replace a function in its module)."""
    global answer_cache, client, compare, lm_eval_task, prepared_folder, prompts, report, runs
    from tasks.evaluation import answer_cache, client, compare, lm_eval_task, prepared_folder, prompts, report, runs

    if args.out is not None:  # a read-only folder: one line now, not after the release is read or the work done
        check_writable(args.out, create=False)
    return args.step(args)


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
    parser.set_defaults(step=run_prepare)


def run_prepare(args: argparse.Namespace) -> int:
    interrupt.leaves(f"{args.out} is as it was before (a preparation is moved in only once complete)")
    prepared = prompts.prepare_release(release_of(args), args.out, args.split, args.profile,
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
    parser.set_defaults(step=run_score)


MAX_RESAMPLES = 100_000  # ~2 s more than the default on the example; 10^8 ran for minutes without a line


def resamples(text: str) -> int:
    """A number of bootstrap resamples: a whole number from 0 to ``MAX_RESAMPLES``."""
    value = NOT_NEGATIVE(text)
    if value > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RESAMPLES}, not {value} (more resamples only narrow "
                                         "the bounds' own noise, and each one costs time per group scored)")
    return value


def run_score(args: argparse.Namespace) -> int:
    interrupt.leaves(f"the result files in {args.out} are the previous ones (the new ones are moved in only once "
                     "all are written)")
    given = {f.name: getattr(args, f.name) for f in fields(report.ScoreRequest) if hasattr(args, f.name)}
    outcome = report.score(report.ScoreRequest(**{**given, "release": release_of(args, args.prepared),
                                                  "figures": not args.no_figures}))
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
    parser.set_defaults(step=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    table = compare.comparison(compare.read_results(args.results), compare.metric_names(args.metrics))
    text = "\n".join(markdown_table(list(table.columns), table.itertuples(index=False), numbers_from=1)) + "\n"
    if args.out is not None:
        write_text(args.out / "compare.tsv", delimited_text(list(table.columns), table.values.tolist(), "\t"))
        write_text(args.out / "compare.md", text)
    print(text, end="")
    return 0


def _register_run(eval_subparsers: argparse._SubParsersAction) -> None:
    run = eval_subparsers.add_parser(
        "run", help="send prepared prompts to an OpenAI-compatible endpoint (cached, resumable)",
        description="The key comes from OPENAI_API_KEY (or --key-env NAME) and is never printed or written. "
                    "The endpoint is checked first (its models listing): no connection or a refused key stops "
                    "in one line. 429/5xx, timeouts and dropped connections are retried with backoff (Retry-After "
                    "honoured); 401/403/404, a server that stops accepting connections and one that accepts them "
                    "but answers nothing for two timeouts stop the run. "
                    "Re-running the same command resumes.")
    run.add_argument("--prepared", type=Path, required=True, help="folder written by kobbq eval prepare")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--endpoint", type=http_url, help="base URL of the API, e.g. http://127.0.0.1:8000/v1")
    source.add_argument("--replay", type=Path,
                        help="answers recorded earlier, matched by the sha256 of each prompt (JSONL id, prompt_id, "
                             "prompt_sha256, raw, status: the answers.jsonl of an earlier run is one)")
    run.add_argument("--model", required=True, action="append",
                     help="model name as the endpoint knows it (repeat it with --deployment for several)")
    add_prompt_selection(run, "--prompts", dest="prompts")
    run.add_argument("--limit", type=POSITIVE, default=None, metavar="N",
                     help="only N samples of each prompt, with their 3 choice orders, spread evenly over the prepared "
                          "file so that every category has its share: a trial run or a benchmark on a slice; with "
                          "--score the slice is scored as a partial run (the other samples counted as missing)")
    run.add_argument("--concurrency", type=POSITIVE, default=4,
                     help="requests in flight at once (default: %(default)s)")
    run.add_argument("--max-tokens", type=POSITIVE, default=30,
                     help="new tokens per answer (default: %(default)s, as upstream)")
    api = run.add_mutually_exclusive_group()
    api.add_argument("--chat", dest="chat", action="store_true", default=True, help="chat completions (default)")
    api.add_argument("--completions", dest="chat", action="store_false", help="plain text completions")
    run.add_argument("--out", type=Path, default=RUNS_DIR,
                     help="output folder (default: %(default)s); answers go to <out>/<model>/")
    run.add_argument("--cache", type=Path, default=None, help="answer cache (default: <out>/answer_cache.sqlite)")
    run.add_argument("--key-env", default="OPENAI_API_KEY",
                     help="environment variable holding the key (default: %(default)s)")
    run.add_argument("--max-retries", type=NOT_NEGATIVE, default=5,
                     help="client retries per request (default: %(default)s)")
    run.add_argument("--timeout", type=real_number(0, above=True), default=REQUEST_SECONDS,
                     help="seconds per request attempt; no answer at all for "
                          f"{STALLED_AFTER_TIMEOUTS} of them stops the run (default: %(default)g)")
    run.add_argument("--price-in", type=real_number(0), default=None,
                     help="price per million input tokens, for the estimate")
    run.add_argument("--price-out", type=real_number(0), default=None, help="price per million output tokens")
    run.add_argument("--score", action="store_true", help="score the answers afterwards (kobbq eval score)")
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary (errors still shown)")
    pool = run.add_argument_group("on a work pool (needs PREFECT_API_URL; see docs/several-machines.md)")
    pool.add_argument("--deployment", help="run every unit as a run of this deployment, e.g. kobbq-model-run/git")
    pool.add_argument("--endpoint-limit", type=POSITIVE, default=None,
                      help="units answering at once on this endpoint (sets its Prefect concurrency limit)")
    pool.add_argument("--shards", type=POSITIVE, default=1, help="units per (model, prompt) (default: %(default)s)")
    pool.add_argument("--lost-after", type=whole_number(LOST_AFTER_FLOOR), default=LOST_AFTER_SECONDS,
                      help="seconds a unit's run may go without renewing its unit's lease (it does before each "
                           "request, and while it waits for answers) before it is taken for lost and the unit runs "
                           f"again (default: %(default)s; at least {LOST_AFTER_FLOOR}; a lost run sends nothing more, "
                           "so no prompt is paid twice, whatever this says)")
    run.set_defaults(step=run_command)

    export = eval_subparsers.add_parser(
        "export-lm-eval", help="write an lm-evaluation-harness task folder for a release",
        description="One shared YAML, one small YAML per prompt (tasks <release>_p<N>), the data as local JSONL "
                    "beside them, and utils.py, which reads and scores the answers as kobbq eval score does (it "
                    "imports kobbq-builder: run the harness where it is installed). Run it with: "
                    "lm_eval --include_path DIR --tasks kobbq --model local-chat-completions ...")
    export.add_argument("--release", type=Path, default=None,
                        help="release folder (kobbq build; default: the one --prepared was made from)")
    export.add_argument("--out", type=Path, required=True, help="task folder to write")
    export.add_argument("--prepared", type=Path, default=None,
                        help="prepared folder (default: prepare the release's test split with its profile's prompts)")
    export.set_defaults(step=export_command)

    back = eval_subparsers.add_parser(
        "import-lm-eval", help="turn lm_eval --log_samples files of an exported task into answer files",
        description="Writes <out>/<model-slug>/answers.jsonl and raw_p<N>.tsv, as kobbq eval run does, "
                    "for kobbq eval score.")
    back.add_argument("samples", nargs="+", type=Path, help="samples_<task>_*.jsonl files written by lm_eval")
    back.add_argument("--model", required=True, help="model name to record in the answers")
    back.add_argument("--out", type=Path, default=RUNS_DIR,
                      help="output folder (default: %(default)s); answers go to <out>/<model>/")
    back.set_defaults(step=import_command)


def run_command(args: argparse.Namespace) -> int:
    for model in args.model:
        runs.check_model_name(model)
    cache_path = args.cache or args.out / "answer_cache.sqlite"
    check_writable(cache_path.parent, create=False)
    if args.limit and args.deployment:
        raise UserError("--limit is for a run from this machine; a run on a work pool (--deployment) answers every "
                        "sample: prepare a smaller release instead")
    requests = runs.sample_slice(runs.load_requests(args.prepared, args.prompts), args.limit)
    endpoint = args.endpoint or f"replay:{args.replay.name}"
    settings = answer_cache.GenerationSettings(endpoint, args.model[0], chat=args.chat, max_tokens=args.max_tokens)
    replay = client.ReplayModel(settings, args.replay) if args.replay else None  # a bad line: one line naming it
    covered = replay.check_covers(requests) if replay else None  # before anything is written: none, refused
    if covered and not args.quiet:
        print(covered, file=sys.stderr)
    kept = f"every answer received is kept in {cache_path}"
    if args.deployment:
        interrupt.leaves(f"{kept}; the unit runs already started keep running on the workers: run the same command "
                         "again to wait for them and start the rest", running=True)
    else:
        interrupt.leaves(f"{kept}: run the same command again to resume")
    with runs.run_lock(args.out, cache_path):
        if args.deployment:
            return pool_command(args, endpoint, cache_path)
        return direct_run(args, requests, settings, cache_path, replay)


def direct_run(args: argparse.Namespace, requests: list, settings: object, cache_path: Path, replay: object) -> int:
    """Every request from this process (a thread pool), answers cached as they arrive."""
    if len(args.model) > 1:
        raise UserError("one --model per direct run; several models need --deployment")
    model = replay or client.model_from_environment(settings, args.key_env, args.max_retries, args.timeout)
    model.check()  # a dead server or a refused key: one line now, not a retried request after another
    with answer_cache.AnswerCache(cache_path) as cache:
        summary = runs.run_requests(requests, model, cache, args.out, args.concurrency, progress=not args.quiet)
    if not args.quiet:
        print(summary.render(args.price_in, args.price_out))
        for path in summary.files:
            print(f"wrote {path}")
    if summary.failed and args.replay:  # a recording does not change: no "run again"
        print(f"error: {summary.failed:,} of {summary.requests:,} request(s) have no answer in the recording "
              f"{args.replay}: get them from a live endpoint (--endpoint)", file=sys.stderr)
        return 1
    if summary.failed:
        print(f"{summary.failed} request(s) failed ({'; '.join(summary.errors[:3])}); run the same command again "
              "to retry them", file=sys.stderr)
        return 1
    return score_answers(args, summary.files[0]) if args.score else 0


def pool_command(args: argparse.Namespace, endpoint: str, cache_path: Path) -> int:
    """Every (model x prompt) unit on the deployment's pool (``flows/model_runs.py``); this process only orchestrates,
    so losing a worker or this process costs only requests in flight. Prefect is imported with --deployment only."""
    from flows import model_runs, server

    url = server.api_setting("url")
    if not url:
        raise UserError("--deployment needs the Prefect server the workers use: set PREFECT_API_URL")
    if args.replay is None:  # the workers use the same URL; the key is checked only if this machine has it
        live = client.model_from_environment(answer_cache.GenerationSettings(endpoint, args.model[0]), args.key_env)
        live.check(key_required=bool(live.api_key))
    unset = "to run without a work pool"
    if found := server.problem(url, unset=unset):
        raise UserError(found)
    try:
        given = ("chat", "max_tokens", "concurrency", "key_env", "shards", "max_retries", "timeout", "lost_after")
        template = model_runs.RunUnit(  # the paths absolute: the workers read them
            str(args.prepared.resolve()), endpoint, args.model[0], 0, str(cache_path.resolve()),
            replay=str(args.replay.resolve()) if args.replay else None, **{name: getattr(args, name) for name in given})
        table = model_runs.model_runs_flow(template, args.model, args.out, args.prompts, args.endpoint_limit,
                                           args.deployment)
    except model_runs.RequestsFailed as exc:
        print(f"{exc}; run the same command again to resume", file=sys.stderr)
        return 1
    except Exception as exc:
        found = None if isinstance(exc, UserError) or not server.lost_api(exc) else server.problem(
            url, server.AFTER_A_FAILURE_SECONDS, unset)
        if found is None:  # not the server's fault: a bug, whose traceback is for --debug
            raise
        raise UserError(found) from exc  # the server went or failed on the way, said in one line
    if not args.quiet:
        for row in table:
            print(f"{row['model']} prompt {row['prompt']}: {row['requests']} requests, {row['ok']} ok, "
                  f"{row['empty']} empty, {row['malformed']} malformed, {row['failed']} failed; "
                  f"tokens in/out {row['tokens_in']}/{row['tokens_out']}")
    if not args.score:
        return 0
    return max(score_answers(args, args.out / runs.model_slug(model) / "answers.jsonl") for model in args.model)


def score_answers(args: argparse.Namespace, answers: Path) -> int:
    """Score the answers as ``kobbq eval score`` does with its defaults (``ScoreRequest``'s)."""
    prepared = prepared_folder.read_summary(args.prepared)
    if not isinstance(prepared.get("release"), str):
        raise UserError("not a prepared summary naming its release: prepare the folder again (kobbq eval prepare)",
                        args.prepared / "prepared.json")
    outcome = report.score(report.ScoreRequest(release=args.prepared / prepared["release"], predictions=[answers],
                                 out=answers.parent / "scores", prepared=args.prepared,
                                 allow_missing=args.limit is not None,  # a slice (--limit)
                                 allow_modified=bool(prepared.get("warnings"))))  # prepared with --allow-modified
    print(outcome.summary)
    return 0


def export_command(args: argparse.Namespace) -> int:
    release = release_of(args, args.prepared)
    interrupt.leaves(f"{args.out} is as it was before (the task files are moved in only once all are written)")
    with prepared_folder.staged(args.out) as staging, tempfile.TemporaryDirectory(prefix="kobbq-prepared-") as temp:
        if args.prepared is None:  # prepared as `kobbq eval prepare` does with its defaults
            prompts.prepare_release(release, Path(temp))
        lm_eval_task.export_task(release, staging, args.prepared or Path(temp))
        written = prepared_folder.move_in(staging, args.out, "utils.py")
    for path in written:
        print(f"wrote {path}")
    return 0


def import_command(args: argparse.Namespace) -> int:
    runs.check_model_name(args.model)
    for path in lm_eval_task.answers_from_log_samples(args.samples, args.model, args.out / runs.model_slug(args.model)):
        print(f"wrote {path}")
    return 0
