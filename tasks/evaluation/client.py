"""Model endpoints behind a small ``Model`` interface: any OpenAI-compatible server (``OpenAIModel``), and a replay.

The official ``openai`` client retries 408/409/429/5xx, timeouts and dropped connections itself; this module sorts
what comes back (docs/reference/scoring.md#run) and stops the run at once (``RunStopped``, never showing the key) on
what concerns every request, rather than retrying each remaining request for its whole backoff (~14 s a request).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx2  # the openai client's HTTP library: its connection errors are what the watch counts
import openai

from core.errors import Location, UserError, redact
from core.text_files import json_records
from tasks.evaluation.limits import REQUEST_SECONDS, STALLED_AFTER_TIMEOUTS
from tasks.evaluation.answer_cache import Answer, GenerationSettings, prompt_sha256

KEY_VARIABLE = "OPENAI_API_KEY"
RECORDED_STATUSES = ("ok", "empty", "malformed")
RECORDED_KEYS = ("id", "prompt_id", "prompt_sha256", "raw", "status")  # a line of a --replay recording
NO_KEY = "no-key-set"  # local servers (vLLM, Ollama, llama.cpp) accept any key; the client needs one
# Every connection attempt failing for this long, this many times: the server is down, not blinking. The
# client's backoff (0.5, 1, 2, 4, 8 s) makes that ~1.5 s with 4 requests in flight, ~3.5 s with one.
DOWN_AFTER_SECONDS = 1.0
DOWN_AFTER_FAILURES = 3
CONNECT_SECONDS = 5.0  # to open a connection (the openai client's default): a host that drops packets is down
CHECK_SECONDS = 10.0  # the models listing before a run answers at once on a live server; no answer: stalled
CHECK_RETRIES = 2  # a refused connection is retried twice (~1.5 s in all) before the run is refused
CHECK_BACKOFF_SECONDS = 0.5
# Requests in a row whose every attempt got a 5xx, none answered in between: a server that fails every request (a
# chat template it cannot apply, a model it cannot run), not a busy one. Retrying every request would take ~15 s
# each: hours for the real release before the run said so.
FAILING_AFTER_REQUESTS = 3


class RunStopped(UserError):
    """The endpoint refuses every request (key, permission, model or URL): nothing more is sent."""


class Model(Protocol):
    settings: GenerationSettings

    def check(self) -> None:
        """Raise ``RunStopped`` if the model cannot answer at all (before any request is sent)."""

    def ask(self, request_id: str, prompt_id: int, prompt: str) -> Answer:
        """One greedy answer to one prompt; faults become a status, except those that stop the run."""


class ConnectionWatch:
    """Whether the endpoint is down or stalled, from the attempts of every thread of a run; once so, for the whole run.

    Down: ``failures`` connection attempts failed, none succeeding in between, over at least ``down_after`` seconds
    (a stopped server, not a dropped connection). Stalled: ``STALLED_AFTER_TIMEOUTS`` attempts timed out and no
    response for ``stalled_after`` seconds. A slow answer within the timeout, or a 429/5xx, is the server alive."""

    def __init__(self, down_after: float = DOWN_AFTER_SECONDS, failures: int = DOWN_AFTER_FAILURES,
                 clock: Callable[[], float] = time.monotonic,
                 stalled_after: float = STALLED_AFTER_TIMEOUTS * REQUEST_SECONDS) -> None:
        self.down_after, self.down_failures, self.stalled_after = down_after, failures, stalled_after
        self._clock = clock
        self._lock = threading.Lock()
        self._first: float | None = None  # the first failure since the last success
        self._failures = 0
        self._last_response = clock()
        self._timeouts = 0  # attempts timed out since the last response
        self.down = False
        self.stalled = False
        self.last_error = ""

    def failed(self, error: str) -> bool:
        """Count a failed connection attempt; True once the endpoint is down."""
        with self._lock:
            now = self._clock()
            self._first = now if self._first is None else self._first
            self._failures += 1
            self.last_error = error
            self.down = self.down or (self._failures >= self.down_failures and now - self._first >= self.down_after)
            return self.down

    def timed_out(self, error: str) -> bool:
        """Count an attempt that connected and got no answer in time; True once the endpoint is stalled."""
        with self._lock:
            self.last_error = error
            self._timeouts += 1
            self.stalled = self.stalled or (self._timeouts >= STALLED_AFTER_TIMEOUTS
                                            and self._clock() - self._last_response >= self.stalled_after)
            return self.stalled

    def silent_for(self) -> float:
        """Seconds since the endpoint last answered anything."""
        return self._clock() - self._last_response

    def succeeded(self) -> None:
        with self._lock:
            self._first, self._failures, self._timeouts = None, 0, 0
            self._last_response = self._clock()

    @property
    def stopped(self) -> bool:
        return self.down or self.stalled


class EndpointDown(openai.APIConnectionError):
    """Raised by ``WatchedHttpClient`` once the endpoint is down or stalled: an ``OpenAIError``, which the client
    never retries."""


class WatchedHttpClient(openai.DefaultHttpxClient):
    """The openai client's HTTP client reporting every connection attempt (each retry is one ``send``) to a watch."""

    def __init__(self, watch: ConnectionWatch, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.watch = watch

    def send(self, request: httpx2.Request, **kwargs: object) -> httpx2.Response:  # type: ignore[override]
        if self.watch.stopped:
            raise EndpointDown(message=self.watch.last_error, request=request)
        try:
            response = super().send(request, **kwargs)
        except (httpx2.ConnectError, httpx2.TimeoutException) as exc:
            # connected, and no answer within the timeout; else no connection
            connected = not isinstance(exc, (httpx2.ConnectError, httpx2.ConnectTimeout))
            if (self.watch.timed_out if connected else self.watch.failed)(str(exc) or type(exc).__name__):
                raise EndpointDown(message=self.watch.last_error, request=request) from exc
            raise
        self.watch.succeeded()
        return response


@dataclass
class OpenAIModel:
    """An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, ...)."""

    settings: GenerationSettings
    api_key: str = field(repr=False)
    key_variable: str = KEY_VARIABLE
    max_retries: int = 5
    timeout_seconds: float = REQUEST_SECONDS

    def __post_init__(self) -> None:
        self.watch = ConnectionWatch(stalled_after=STALLED_AFTER_TIMEOUTS * self.timeout_seconds)
        self._failing = 0  # requests in a row failed with a 5xx (FAILING_AFTER_REQUESTS)
        self._client = openai.OpenAI(base_url=self.settings.endpoint, api_key=self.api_key or NO_KEY,
                                     max_retries=self.max_retries,
                                     timeout=httpx2.Timeout(self.timeout_seconds,
                                                            connect=min(self.timeout_seconds, CONNECT_SECONDS)),
                                     http_client=WatchedHttpClient(self.watch))

    def check(self, key_required: bool = True) -> None:
        """List the endpoint's models before any request: an unreachable or stalled server, or a refused key, stops the
        run here in seconds instead of after every request's retries. Anything else (404, 429/5xx) is left to the
        requests; ``key_required=False`` (the key is on the workers) checks the connection only."""
        seconds = min(self.timeout_seconds, CHECK_SECONDS)
        listing = self._client.with_options(max_retries=0, timeout=httpx2.Timeout(
            seconds, connect=min(seconds, CONNECT_SECONDS)))
        for attempt in range(CHECK_RETRIES + 1):
            try:
                return self._check_listed([model.id for model in listing.models.list()])
            except openai.APITimeoutError as exc:  # (an APIConnectionError) connected, and no answer: not retried
                if isinstance(exc.__cause__, httpx2.ConnectTimeout):
                    raise self._unreachable(exc) from None
                raise RunStopped(f"{self.settings.endpoint} accepts connections but did not list its models "
                                 f"within {seconds:g} s: the server is stalled or still starting; check it, then "
                                 "run the same command again") from None
            except openai.APIConnectionError as exc:  # refused, unknown host, or the watch saw it down
                if isinstance(exc, EndpointDown) or attempt == CHECK_RETRIES:
                    raise self._unreachable(exc) from None
                time.sleep(CHECK_BACKOFF_SECONDS * 2 ** attempt)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                if key_required:
                    raise self._stop(exc) from None
                return
            except openai.APIError:
                return

    def _check_listed(self, listed: list[str]) -> None:
        """A server with one model (llama.cpp's) answers every model name with it, so a wrong ``--model`` would file
        its answers under a name that did not give them: a name its listing lacks stops the run. An empty listing
        tells nothing; Ollama lists ``name:latest`` for ``name``."""
        model = self.settings.model
        if listed and model not in listed and f"{model}:latest" not in listed:
            shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
            raise RunStopped(f"{self.settings.endpoint} does not list a model {model!r} (it lists {shown}; a server "
                             "with one model answers any name with it): check --model")

    def _stalled(self) -> RunStopped:
        return RunStopped(f"{self.settings.endpoint} accepted connections but sent no answer for "
                          f"{self.watch.silent_for():.0f} s (each attempt timed out after {self.timeout_seconds:g} s, "
                          "--timeout): the server is stalled or overloaded; the answers received are kept in the "
                          "answer cache: check the server, then run the same command again (or give a longer "
                          "--timeout for a slow model)")

    def _unreachable(self, exc: openai.APIConnectionError) -> RunStopped:
        reason = redact(str(exc.__cause__ or exc), self.api_key)
        return RunStopped(f"cannot connect to {self.settings.endpoint} ({reason or type(exc.__cause__).__name__}); "
                          "check --endpoint and that the server is running")

    def ask(self, request_id: str, prompt_id: int, prompt: str) -> Answer:
        try:
            response = self._create(prompt)
        except EndpointDown as exc:
            if self.watch.stalled:
                raise self._stalled() from None
            raise RunStopped(f"lost the connection to {self.settings.endpoint} "
                             f"({redact(exc.message, self.api_key)}); the answers "
                             "received are kept in the answer cache: run the same command again once the server "
                             "is back") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            raise self._stop(exc) from None
        except openai.APIResponseValidationError as exc:
            return Answer("", "malformed", error=redact(str(exc), self.api_key))
        except (openai.APIStatusError, openai.APIConnectionError) as exc:  # after the client's own retries
            self._failing = self._failing + 1 if isinstance(exc, openai.InternalServerError) else 0
            if self._failing >= FAILING_AFTER_REQUESTS:
                raise RunStopped(f"{self.settings.endpoint} failed {self._failing} requests in a row, every attempt "
                                 f"({self._failure(exc)}): the server fails every request, its log says why; the "
                                 "answers received are kept in the answer cache: run the same command again once "
                                 "it is fixed") from None
            return Answer("", "failed", error=self._failure(exc))
        self._failing = 0
        return answer_from_response(response, self.settings.chat)

    def _failure(self, exc: openai.OpenAIError) -> str:
        """Why a request failed, on one line; a prompt too long in words that are the same for every such prompt
        (the server's own message names each prompt's token count, and the run's last line would list them all)."""
        if isinstance(exc, openai.BadRequestError) and (exc.code == "context_length_exceeded"  # OpenAI, llama.cpp
                                                         or "context length" in str(exc)):  # vLLM
            return (f"a prompt longer than {self.settings.model}'s context (HTTP 400): give the server a longer "
                    "context (llama.cpp: --n_ctx, vLLM: --max-model-len) or a shorter prompt table before running "
                    "again")
        return " ".join(redact(f"{type(exc).__name__}: {exc}", self.api_key).split())

    def _create(self, prompt: str) -> object:
        common = {"model": self.settings.model, "max_tokens": self.settings.max_tokens,
                  "temperature": self.settings.temperature}
        if self.settings.chat:
            return self._client.chat.completions.create(messages=[{"role": "user", "content": prompt}], **common)
        return self._client.completions.create(prompt=prompt, **common)

    def _stop(self, exc: openai.APIStatusError) -> RunStopped:
        text = redact(str(exc), self.api_key)
        if isinstance(exc, openai.NotFoundError):
            return RunStopped(f"{self.settings.endpoint} has no model {self.settings.model!r} or no such route "
                              f"(HTTP 404: {text}); check --endpoint and --model")
        unset = "" if self.api_key else f"; {self.key_variable} is not set"
        return RunStopped(f"{self.settings.endpoint} refused the key (HTTP {exc.status_code}: {text}){unset}")


def answer_from_response(response: object, chat: bool) -> Answer:
    """Sort a 200 answer: text -> ok, no text -> empty, no usable choice -> malformed."""
    try:
        choice = response.choices[0]  # type: ignore[attr-defined]
        text = choice.message.content if chat else choice.text
    except (AttributeError, IndexError, TypeError):
        return Answer("", "malformed")
    if text is not None and not isinstance(text, str):
        return Answer("", "malformed")
    usage = getattr(response, "usage", None)
    tokens = (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
    if not text or not text.strip():
        return Answer("", "empty", *tokens)
    return Answer(text, "ok", *tokens)


@dataclass
class ReplayModel:
    """Answers recorded earlier (``kobbq eval run``'s ``answers.jsonl`` is one), looked up by the prompt text's sha256.

    Not by request id: the same id names another question in another release, split or prompt table. Two lines with
    the same prompt and different answers are refused: which one the model gave cannot be told."""

    settings: GenerationSettings
    recording: Path

    def check(self) -> None:
        """Nothing to reach: the recording was read when the model was made."""

    def __post_init__(self) -> None:
        self._answers: dict[str, tuple[Answer, Location]] = {}
        self._ids: set[tuple[int, str]] = set()  # (prompt_id, id) recorded, for whatever prompt text
        for where, row in json_records(self.recording):
            self._add(where, row)

    def _add(self, where: Location, row: object) -> None:
        if not isinstance(row, dict) or not all(key in row for key in RECORDED_KEYS):
            raise UserError(f"not a recorded answer (an object with {', '.join(RECORDED_KEYS)})", where)
        try:
            key = (int(row["prompt_id"]), str(row["id"]))
        except (ValueError, TypeError):
            raise UserError("prompt_id must be a whole number", Location(where.file, where.row, "prompt_id")) from None
        digest = str(row["prompt_sha256"])
        if len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise UserError("prompt_sha256 must be the sha256 of the prompt text, 64 hexadecimal digits",
                            Location(where.file, where.row, "prompt_sha256"))
        answer = Answer(str(row["raw"]), str(row["status"]))
        if answer.status not in RECORDED_STATUSES:
            raise UserError(f"status must be one of {', '.join(RECORDED_STATUSES)}",
                            Location(where.file, where.row, "status"))
        earlier = self._answers.get(digest)
        if earlier is not None and earlier[0] != answer:
            raise UserError(f"a second, different answer to the same prompt (first at row {earlier[1].row}): "
                            "which one the model gave cannot be told", Location(where.file, where.row, "raw"))
        self._answers.setdefault(digest, (answer, where))
        self._ids.add(key)

    def ask(self, request_id: str, prompt_id: int, prompt: str) -> Answer:
        recorded = self._answers.get(prompt_sha256(prompt))
        if recorded is not None:
            return recorded[0]
        if (prompt_id, request_id) in self._ids:
            return Answer("", "failed", error=f"{self.recording} answers {request_id} (prompt {prompt_id}) for "
                                              "another question")
        return Answer("", "failed", error=f"{request_id} (prompt {prompt_id}) is not in {self.recording}")

    def check_covers(self, requests: Sequence[object]) -> str:
        """How many ``requests`` the recording answers, said before any is asked; none: refused (a replay of other
        questions would only write failed rows), with why and what to do (running again cannot change it)."""
        missing = [r for r in requests if prompt_sha256(r.prompt) not in self._answers]
        if not missing:
            return f"the recording {self.recording} answers all {len(requests):,} requests"
        if len(missing) < len(requests):
            return (f"the recording {self.recording} answers {len(requests) - len(missing):,} of {len(requests):,} "
                    f"requests; the other {len(missing):,} will be failed rows")
        other = sum(1 for r in missing if (r.prompt_id, r.id) in self._ids)
        other = (f"; {other:,} of their ids are in it, recorded for other questions (another release, split or "
                 "prompt table)" if other else "")
        raise UserError(f"the recording {self.recording} answers none of the {len(requests):,} requests of this "
                        f"prepared folder{other}; nothing was written: a replay answers only the questions it was "
                        "recorded for: replay it against the prepared folder it was recorded from, or get the "
                        "answers from a live endpoint (--endpoint)")


def model_from_environment(settings: GenerationSettings, key_variable: str = KEY_VARIABLE,
                           max_retries: int = 5, timeout_seconds: float = REQUEST_SECONDS) -> OpenAIModel:
    """The live endpoint, its key read from ``key_variable`` (never printed, never written)."""
    return OpenAIModel(settings, os.environ.get(key_variable, ""), key_variable, max_retries, timeout_seconds)
