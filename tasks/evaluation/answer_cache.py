"""The answer cache: every model answer paid for is kept, so nothing is ever asked twice.

An SQLite file keyed by everything that decides a greedy answer: the endpoint, the model,
the API kind (chat or completions), the generation parameters and the prompt text. Each
answer is committed as soon as it arrives, so a killed run resumes where it stopped and a
re-run with another model or prompt sends only what is new. Only answers are stored
(``ok``, ``empty``, ``malformed``); a request that failed is not, so the next run retries it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    settings TEXT NOT NULL,
    prompt TEXT NOT NULL,
    raw TEXT NOT NULL,
    status TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL
)
"""


@dataclass(frozen=True)
class GenerationSettings:
    """Everything besides the prompt that decides the answer (and so the cache key)."""

    endpoint: str
    model: str
    chat: bool = True
    max_tokens: int = 30  # the upstream default of new tokens
    temperature: float = 0.0  # greedy

    @property
    def settings_json(self) -> str:
        return json.dumps({"api": "chat" if self.chat else "completions", "max_tokens": self.max_tokens,
                           "temperature": self.temperature}, sort_keys=True)


def cache_key(prompt: str, settings: GenerationSettings) -> str:
    payload = json.dumps([settings.endpoint.rstrip("/"), settings.model, settings.settings_json, prompt],
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Answer:
    """One model answer: its text (``""`` unless ok), how it came back, and the tokens it cost."""

    raw: str
    status: str  # ok | empty | malformed | failed
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""  # why it failed (never contains the key); not cached


class AnswerCache:
    """A small SQLite store; one connection per thread; use as a context manager so the connection is closed.

    SQLite's own errors (a full disk, a file that is not a database) are one ``UserError`` naming the
    file: every answer committed before is still in it, so the message says to run the same command again.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._storing():
            # Several processes (Prefect workers on one machine) may share the file: wait for each other's writes.
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            # A commit survives the process being killed, not a power cut; it costs no fsync per answer.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()

    @contextmanager
    def _storing(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise cache_error(exc, self.path) from None

    def __enter__(self) -> "AnswerCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if hasattr(self, "_db"):
            self._db.close()

    def get(self, prompt: str, settings: GenerationSettings) -> Answer | None:
        with self._storing():
            row = self._db.execute("SELECT raw, status, prompt_tokens, completion_tokens FROM answers WHERE key = ?",
                                   (cache_key(prompt, settings),)).fetchone()
        return None if row is None else Answer(row[0], row[1], int(row[2]), int(row[3]))

    def put(self, prompt: str, settings: GenerationSettings, answer: Answer) -> None:
        """Store one answer in its own transaction: it is kept whatever happens next."""
        if answer.status == "failed":
            raise ValueError("a failed request is not an answer; it is retried, not cached")
        with self._storing(), self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cache_key(prompt, settings), settings.endpoint.rstrip("/"), settings.model, settings.settings_json,
                 prompt, answer.raw, answer.status, answer.prompt_tokens, answer.completion_tokens))

    def __len__(self) -> int:
        with self._storing():
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])


def cache_error(exc: sqlite3.DatabaseError, path: Path) -> UserError:
    """SQLite's error as the user can act on it; the cache holds paid answers, so it is never to be deleted."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("full" in text or "disk I/O" in text):
        return UserError(f"the answer cache cannot grow: the disk is full ({text}); every answer stored before is "
                         "kept in it: free space on that disk (or give --cache on another one) and run the same "
                         "command again: it sends only the requests not stored", path)
    if isinstance(exc, sqlite3.OperationalError):
        return UserError(f"the answer cache cannot be written ({text}); the answers stored before are kept: fix "
                         "that and run the same command again", path)
    return UserError(f"is not an answer cache that can be read (SQLite: {text}); it may hold paid answers, so move it "
                     "away rather than deleting it, and give --cache for a new one", path)
