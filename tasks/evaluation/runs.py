"""A run: the prepared requests of a release -> one model's answers, from the answer cache or sent (each distinct prompt
once) by a pool of threads, then written from the cache in request order (``answers.jsonl``, ``raw_p<N>.tsv``), so
a run killed midway and resumed writes the same bytes as a run never interrupted.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from core.console import LineProgress
from core.errors import Location, UserError
from core.atomic import write_text
from core.tables import delimited_text
from core.text_files import json_records
from tasks.evaluation.answer_cache import Answer, AnswerCache, GenerationSettings, UnitLease, prompt_sha256
from tasks.evaluation.prepared_folder import move_in, staged
from tasks.release.publish import build_lock

if TYPE_CHECKING:  # the openai client (~1.4 s to import) is for a run, not for reading or scoring answers
    from tasks.evaluation.client import Model

BUSY = ("another `kobbq eval run` (pid {pid}) is answering into this folder; wait for it to finish (two runs at "
        "once would each pay for the same answers)")

REQUIRED_KEYS = ("id", "sample_id", "prompt_id", "prompt", "choices", "answer")


@dataclass(frozen=True)
class Request:
    id: str  # <sample_id>-<k>
    sample_id: str
    prompt_id: int
    prompt: str
    choices: dict[str, str] = field(default_factory=dict, compare=False)  # letter -> choice text
    answer: str = ""  # the correct letter


def load_requests(prepared: Path, prompts: Sequence[int] | None = None) -> list[Request]:
    """The prepared requests (of the chosen prompts), in file order; bad lines are named with their number."""
    path = Path(prepared) / "requests.jsonl"
    if not path.exists():
        raise UserError("no requests.jsonl here: prepare the release first (kobbq eval prepare)", Path(prepared))
    requests: list[Request] = []
    seen: set[tuple[int, str]] = set()
    for where, row in json_records(path):
        request = _request_from_row(row, where)
        if (request.prompt_id, request.id) in seen:
            raise UserError(f"request {request.id} of prompt {request.prompt_id} appears twice",
                            Location(where.file, where.row, "id"))
        seen.add((request.prompt_id, request.id))
        if prompts is None or request.prompt_id in prompts:
            requests.append(request)
    missing = sorted(set(prompts or ()) - {r.prompt_id for r in requests})
    if missing:
        raise UserError(f"no requests for prompt(s) {', '.join(map(str, missing))}", path)
    return requests


def sample_slice(requests: Sequence[Request], limit: int | None) -> list[Request]:
    """``limit`` samples of each prompt with all their choice orders, spread evenly over the file; None: every request.
    Not the top ones: a release is written category by category, and a slice should see every category and context."""
    if limit is None:
        return list(requests)
    kept: set[tuple[int, str]] = set()
    for prompt_id in dict.fromkeys(r.prompt_id for r in requests):
        samples = list(dict.fromkeys(r.sample_id for r in requests if r.prompt_id == prompt_id))
        step = max(len(samples) / limit, 1.0)
        kept.update((prompt_id, samples[int(i * step)]) for i in range(min(limit, len(samples))))
    return [r for r in requests if (r.prompt_id, r.sample_id) in kept]


def _request_from_row(row: object, where: Location) -> Request:
    if not isinstance(row, dict):
        raise UserError(f"not a request (a JSON object with {', '.join(REQUIRED_KEYS)}); prepare the folder again",
                        where)
    absent = [key for key in REQUIRED_KEYS if key not in row]
    if absent:
        raise UserError(f"missing {', '.join(absent)}", Location(where.file, where.row, absent[0]))
    if not isinstance(row["prompt_id"], int) or not isinstance(row["prompt"], str):
        raise UserError("prompt_id must be an integer and prompt a string", Location(where.file, where.row, "prompt_id"))
    if not isinstance(row["choices"], dict) or row["answer"] not in row["choices"]:
        raise UserError("choices must map letters to texts, and answer be one of the letters",
                        Location(where.file, where.row, "choices"))
    return Request(str(row["id"]), str(row["sample_id"]), row["prompt_id"], row["prompt"],
                   {str(k): str(v) for k, v in row["choices"].items()}, str(row["answer"]))


LOCK = "eval-run"  # <out>/.eval-run.lock (tasks.release.publish.build_lock names it)


@contextmanager
def run_lock(out: Path, cache: Path) -> Iterator[None]:
    """One ``kobbq eval run`` at a time per output folder (and per answer cache): a second run stops at once instead of
    paying for every request the first is sending. The locks are hidden files in the folder and beside the cache."""
    out, cache = Path(out).resolve(), Path(cache).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as locks:
        for lock, folder, busy in ((out / LOCK, out, BUSY),
                                   (cache, cache, BUSY.replace("into this folder", "with this answer cache"))):
            if lock == cache and out in cache.parents:
                continue  # the cache in the output folder: its lock is the folder's
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                locks.enter_context(build_lock(lock, busy))
            except UserError as busy_error:  # named by the folder (or cache), not by the lock's stem
                raise UserError(busy_error.message, folder) from None
        yield


SLUG_LENGTH = 120  # a folder name stays far below the file system's 255 bytes


def model_slug(model: str) -> str:
    """The model's folder name: ``org/Model:7b`` -> ``org-Model-7b``; a longer one than ``SLUG_LENGTH`` is cut and
    told apart by a hash of the whole name (a name the file system refuses would fail after the answers are paid)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"
    if len(slug) <= SLUG_LENGTH:
        return slug
    return f"{slug[:SLUG_LENGTH - 13].rstrip('-.')}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:12]}"


def check_model_name(model: str) -> str:
    """A model name as results show it: not empty, no control characters (a line break would split a row of
    results.md and a line of the answer files' readers)."""
    if not model.strip() or not model.isprintable():
        raise UserError(f"model name {model[:80]!r} is empty or holds control characters; give the name as the "
                        "endpoint knows it, e.g. org/Model-7B")
    return model


@dataclass
class RunSummary:
    """What one run did: requests answered now, from the cache, failed; tokens; the files written."""

    model: str
    requests: int = 0
    sent: int = 0  # distinct prompts answered by the endpoint in this run
    from_cache: int = 0  # requests whose answer was already cached
    failed: int = 0  # requests without an answer (retried by the next run)
    prompt_tokens: int = 0  # spent in this run
    completion_tokens: int = 0
    statuses: Counter = field(default_factory=Counter)
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one example message per distinct failure

    def render(self, price_in: float | None = None, price_out: float | None = None) -> str:
        """The run in one line, with the cost of its tokens at prices per million tokens when given."""
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items()))
        text = (f"{self.model}: {self.requests} requests ({statuses}); {self.sent} sent now, {self.from_cache} from "
                f"the cache, {self.failed} failed; tokens in/out {self.prompt_tokens}/{self.completion_tokens}")
        if price_in is None and price_out is None:
            return text
        cost = (self.prompt_tokens * (price_in or 0.0) + self.completion_tokens * (price_out or 0.0)) / 1_000_000
        return text + f"; estimated cost {cost:.4f}"


def run_requests(requests: Sequence[Request], model: Model, cache: AnswerCache, out: Path, concurrency: int = 4,
                 progress: bool = True) -> RunSummary:
    """Answer every request (cache first), then write the model's answer files under ``out``."""
    answers, summary = answer_requests(requests, model, cache, concurrency, progress)
    summary.files = write_answer_files(requests, answers, summary.model, Path(out) / model_slug(summary.model))
    return summary


def cached_answers(requests: Sequence[Request], settings: GenerationSettings, cache: AnswerCache) -> dict[str, Answer]:
    """The answers the cache already holds, by prompt text."""
    found: dict[str, Answer] = {}
    for request in requests:
        answer = found.get(request.prompt) or cache.get(request.prompt, settings)
        if answer is not None:
            found[request.prompt] = answer
    return found


def answer_requests(requests: Sequence[Request], model: Model, cache: AnswerCache, concurrency: int = 4,
                    progress: bool = True, lease: UnitLease | None = None) -> tuple[list[Answer], RunSummary]:
    """Every request's answer, in request order: from the cache, else sent (each distinct prompt once). A ``lease`` is
    renewed while sending and waiting; lost, it stops the run (``LeaseLost``), answers in flight recorded."""
    settings = model.settings
    answers = cached_answers(requests, settings, cache)
    summary = RunSummary(settings.model, requests=len(requests),
                         from_cache=sum(1 for r in requests if r.prompt in answers))
    to_send = list({r.prompt: r for r in requests if r.prompt not in answers}.values())

    def record(request: Request, answer: Answer) -> None:
        answers[request.prompt] = answer
        if answer.status != "failed":
            cache.put(request.prompt, settings, answer)
            summary.sent += 1
            summary.prompt_tokens += answer.prompt_tokens
            summary.completion_tokens += answer.completion_tokens
        elif answer.error not in summary.errors:
            summary.errors.append(answer.error)

    with progress_of(len(to_send), settings.model, progress) as bar:
        _ask_all(to_send, model, concurrency, record, bar.update, lease)
    ordered = [answers[r.prompt] for r in requests]
    summary.statuses.update(a.status for a in ordered)
    summary.failed = summary.statuses["failed"]
    return ordered, summary


def progress_of(total: int, model: str, shown: bool) -> tqdm | LineProgress:
    """A bar on a terminal; elsewhere (a log file, CI) a plain line every few seconds."""
    if shown and total and not sys.stderr.isatty():
        return LineProgress(total, model, "requests answered")
    return tqdm(total=total, desc=model, unit="req", disable=not shown or not total)


def _ask_all(requests: Sequence[Request], model: Model, concurrency: int,
             record: Callable[[Request, Answer], None], tick: Callable[[], object],
             lease: UnitLease | None = None) -> None:
    """Send every request, ``concurrency`` at a time, and ``record`` each answer as it arrives. Only this thread sends
    (renewing the ``lease`` before each request and every ``lease.every`` seconds while waiting); after a stop, answers
    to requests already in flight are still recorded, since they are paid for."""
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="kobbq-ask")
    waiting = iter(requests)
    in_flight: dict[Future[Answer], Request] = {}
    try:
        while True:
            for request in itertools.islice(waiting, max(1, concurrency) - len(in_flight)):
                if lease:
                    lease.keep()
                in_flight[pool.submit(model.ask, request.id, request.prompt_id, request.prompt)] = request
            if not in_flight:
                return
            done, _ = wait(in_flight, timeout=lease.every if lease else None, return_when=FIRST_COMPLETED)
            for future in done:
                record(in_flight.pop(future), future.result())
                tick()
            if lease and not done:
                lease.keep()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for future, request in in_flight.items():
            if not future.cancelled() and future.exception() is None:
                record(request, future.result())


def write_answer_files(requests: Sequence[Request], answers: Sequence[Answer], model: str, folder: Path) -> list[Path]:
    """``answers.jsonl`` and one upstream ``raw_p<N>.tsv`` per prompt, in request order, written into a staging
    folder and moved in together (``answers.jsonl`` last): a full disk leaves the previous files."""
    lines = [json.dumps({"id": r.id, "sample_id": r.sample_id, "prompt_id": r.prompt_id,
                         "prompt_sha256": prompt_sha256(r.prompt), "model": model, "raw": a.raw, "status": a.status},
                        ensure_ascii=False)
             for r, a in zip(requests, answers)]
    prompts = sorted({r.prompt_id for r in requests})
    with staged(Path(folder)) as staging:
        write_text(staging / "answers.jsonl", "\n".join(lines) + "\n")
        for prompt_id in prompts:
            rows = [(r.id, a.raw) for r, a in zip(requests, answers) if r.prompt_id == prompt_id]
            write_text(staging / f"raw_p{prompt_id}.tsv", delimited_text(["guid", "raw"], rows, "\t"))
        move_in(staging, Path(folder), "answers.jsonl")
    return [Path(folder) / name for name in ["answers.jsonl", *(f"raw_p{prompt_id}.tsv" for prompt_id in prompts)]]
