"""``kobbq eval run`` and ``kobbq eval export-lm-eval``: get model answers for a prepared release.

``run`` sends every prepared request to an OpenAI-compatible endpoint (chat or completions),
greedy, 30 new tokens by default; answers are cached in SQLite (``<out>/answer_cache.sqlite``),
so a killed run resumes and a re-run sends only what is new. ``--replay FILE`` answers from a
recording instead (no network, no key). ``--deployment NAME`` shares the run out: this command
orchestrates (flow ``kobbq-model-runs``, here, holding no worker) and every (model x prompt)
unit runs on the deployment's work pool (``flows/model_runs.py``). ``--score`` scores the answers afterwards with
``kobbq eval score``. ``export-lm-eval`` writes an lm-evaluation-harness task folder for a release;
``import-lm-eval`` turns the harness's ``--log_samples`` output into the same answer files.

Registered by ``kobbq.commands.eval`` (the ``eval`` group), not discovered on its own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from core import interrupt
from core.atomic import check_writable
from core.errors import UserError
from core.paths import DEFAULT_BUILD_DIR
from core.text_files import read_json
from kobbq.arguments import (NOT_NEGATIVE, POSITIVE, add_prompt_selection, http_url, real_number, release_of,
                             whole_number)
from tasks.evaluation.limits import LOST_AFTER_FLOOR, LOST_AFTER_SECONDS, REQUEST_SECONDS, STALLED_AFTER_TIMEOUTS

RUNS_DIR = DEFAULT_BUILD_DIR / "evaluation" / "runs"  # answers of eval run and import-lm-eval, <out>/<model>/


def register(eval_subparsers: argparse._SubParsersAction) -> None:
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
    run.set_defaults(handler=run_command)

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
    export.set_defaults(handler=export_command)

    back = eval_subparsers.add_parser(
        "import-lm-eval", help="turn lm_eval --log_samples files of an exported task into answer files",
        description="Writes <out>/<model-slug>/answers.jsonl and raw_p<N>.tsv, as kobbq eval run does, "
                    "for kobbq eval score.")
    back.add_argument("samples", nargs="+", type=Path, help="samples_<task>_*.jsonl files written by lm_eval")
    back.add_argument("--model", required=True, help="model name to record in the answers")
    back.add_argument("--out", type=Path, default=RUNS_DIR,
                      help="output folder (default: %(default)s); answers go to <out>/<model>/")
    back.set_defaults(handler=import_command)


def run_command(args: argparse.Namespace) -> int:
    # The evaluation package (pandas, the openai client): not for --help.
    from tasks.evaluation.runs import check_model_name, load_requests, run_lock

    for model in args.model:
        check_model_name(model)
    cache_path = args.cache or args.out / "answer_cache.sqlite"
    check_writable(args.out, create=False)
    check_writable(cache_path.parent, create=False)
    requests = load_requests(args.prepared, args.prompts)
    endpoint = args.endpoint or f"replay:{args.replay.name}"
    replay = replay_model(args, endpoint) if args.replay else None
    covered = replay.check_covers(requests) if replay else None  # before anything is written: none, refused
    if covered and not args.quiet:
        print(covered, file=sys.stderr)
    kept = f"every answer received is kept in {cache_path}"
    if args.deployment:
        interrupt.leaves(f"{kept}; the unit runs already started keep running on the workers: run the same command "
                         "again to wait for them and start the rest", running=True)
    else:
        interrupt.leaves(f"{kept}: run the same command again to resume")
    with run_lock(args.out, cache_path):
        if args.deployment:
            return pool_command(args, endpoint)
        return direct_run(args, requests, endpoint, cache_path, replay)


def direct_run(args: argparse.Namespace, requests: list, endpoint: str, cache_path: Path, replay: object) -> int:
    """Every request from this process (a thread pool), answers cached as they arrive."""
    from tasks.evaluation.answer_cache import AnswerCache, GenerationSettings
    from tasks.evaluation.client import model_from_environment
    from tasks.evaluation.runs import run_requests

    if len(args.model) > 1:
        raise UserError("one --model per direct run; several models need --deployment")
    settings = GenerationSettings(endpoint, args.model[0], chat=args.chat, max_tokens=args.max_tokens)
    model = replay or model_from_environment(settings, args.key_env, args.max_retries, args.timeout)
    model.check()  # a dead server or a refused key: one line now, not a retried request after another
    with AnswerCache(cache_path) as cache:
        summary = run_requests(requests, model, cache, args.out, args.concurrency, progress=not args.quiet)
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


def replay_model(args: argparse.Namespace, endpoint: str) -> object:
    """The recording of ``--replay``, read and checked (a bad line: one line naming it)."""
    from tasks.evaluation.answer_cache import GenerationSettings
    from tasks.evaluation.client import ReplayModel

    settings = GenerationSettings(endpoint, args.model[0], chat=args.chat, max_tokens=args.max_tokens)
    return ReplayModel(settings, args.replay)


def pool_command(args: argparse.Namespace, endpoint: str) -> int:
    """Every (model x prompt) unit on the deployment's pool; this process only orchestrates.

    No worker holds the orchestration, so losing any worker costs only its requests in flight;
    losing this process costs nothing that the same command, run again, does not pick up (the
    units still running are waited for, not started twice).
    """
    # Prefect and its client only with --deployment: eval prepare, score and compare never import it.
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL  # the server the workers use

    from flows.model_runs import RequestsFailed, model_runs_flow
    from flows.orchestration import check_server, server_problem
    from tasks.evaluation.client import check_from_here
    from tasks.evaluation.runs import model_slug

    url, auth_set = PREFECT_API_URL.value(), bool(PREFECT_API_AUTH_STRING.value())
    if not url:
        raise UserError("--deployment needs the Prefect server the workers use: set PREFECT_API_URL")
    check_from_here(endpoint, args.model[0], args.key_env, args.replay)
    check_server(url, auth_set)
    try:
        table = model_runs_flow(prepared=args.prepared, endpoint=endpoint, models=args.model, out=args.out,
                                prompts=args.prompts, cache=args.cache, chat=args.chat, max_tokens=args.max_tokens,
                                concurrency=args.concurrency, endpoint_limit=args.endpoint_limit,
                                key_env=args.key_env, replay=args.replay, deployment=args.deployment,
                                shards=args.shards, lost_after=args.lost_after, max_retries=args.max_retries,
                                timeout=args.timeout)
    except RequestsFailed as exc:
        print(f"{exc}; run the same command again to resume", file=sys.stderr)
        return 1
    except Exception as exc:
        problem = server_problem(url, exc, auth_set)  # it stopped answering, or failed, on the way
        if problem is None or isinstance(exc, UserError):
            raise
        raise UserError(problem) from exc  # the server's fault, said in one line (the traceback: --debug)
    if not args.quiet:
        for row in table:
            print(f"{row['model']} prompt {row['prompt']}: {row['requests']} requests, {row['ok']} ok, "
                  f"{row['empty']} empty, {row['malformed']} malformed, {row['failed']} failed; "
                  f"tokens in/out {row['tokens_in']}/{row['tokens_out']}")
    if not args.score:
        return 0
    return max(score_answers(args, args.out / model_slug(model) / "answers.jsonl") for model in args.model)


def score_answers(args: argparse.Namespace, answers: Path) -> int:
    """Score the answers as ``kobbq eval score`` does with its defaults (``ScoreRequest``'s)."""
    from tasks.evaluation.report import ScoreRequest, score

    prepared = read_json(args.prepared / "prepared.json", "prepared summary")
    if not isinstance(prepared, dict) or not isinstance(prepared.get("release"), str):
        raise UserError("not a prepared summary naming its release: prepare the folder again (kobbq eval prepare)",
                        args.prepared / "prepared.json")
    outcome = score(ScoreRequest(release=args.prepared / prepared["release"], predictions=[answers],
                                 out=answers.parent / "scores", prepared=args.prepared,
                                 allow_modified=bool(prepared.get("warnings"))))  # prepared with --allow-modified
    print(outcome.summary)
    return 0


def export_command(args: argparse.Namespace) -> int:
    from tasks.evaluation.lm_eval_task import export_task  # the evaluation package: not for --help
    from tasks.evaluation.prepared_folder import move_in, staged

    check_writable(args.out, create=False)  # a read-only folder: one line now, not after the export
    release = release_of(args, args.prepared)
    interrupt.leaves(f"{args.out} is as it was before (the task files are moved in only once all are written)")
    with staged(args.out) as staging, ExitStack() as temporary:
        prepared = args.prepared or Path(temporary.enter_context(prepared_by_cli(release)))
        export_task(release, staging, prepared)
        written = move_in(staging, args.out, "utils.py")
    for path in written:
        print(f"wrote {path}")
    return 0


def prepared_by_cli(release: Path) -> tempfile.TemporaryDirectory:
    """The release prepared as ``kobbq eval prepare`` does with its defaults, in a temporary folder."""
    from tasks.evaluation.prompts import prepare_release

    folder = tempfile.TemporaryDirectory(prefix="kobbq-prepared-")
    try:
        prepare_release(release, Path(folder.name))
    except BaseException:
        folder.cleanup()
        raise
    return folder


def import_command(args: argparse.Namespace) -> int:
    # The evaluation package: not for --help.
    from tasks.evaluation.lm_eval_task import answers_from_log_samples
    from tasks.evaluation.runs import check_model_name, model_slug

    check_model_name(args.model)
    check_writable(args.out, create=False)
    for path in answers_from_log_samples(args.samples, args.model, args.out / model_slug(args.model)):
        print(f"wrote {path}")
    return 0
