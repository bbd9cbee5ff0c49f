"""The answer cache: every model answer paid for is kept, so nothing is ever asked twice. An SQLite file keyed by all
that decides a greedy answer (endpoint, model, API kind, generation settings, prompt text), each answer committed as
it arrives; a failed request is not stored, so the next run retries it. The same file holds the units' leases.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.sqlite_store import SqliteStore

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
);
CREATE TABLE IF NOT EXISTS leases (unit TEXT PRIMARY KEY, holder TEXT, beats INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS revoked (holder TEXT PRIMARY KEY, why TEXT NOT NULL)
"""


def prompt_sha256(prompt: str) -> str:
    """What a recorded answer is matched by: the full prompt text the model was sent (its only message)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


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


class AnswerCache(SqliteStore):
    """The answers a model was paid for, and the units' leases (see ``SqliteStore``); one connection per thread."""

    schema = _SCHEMA

    def __init__(self, path: Path) -> None:
        super().__init__(path, shared=True)

    def error(self, exc: sqlite3.DatabaseError) -> UserError:
        """SQLite's error as the user can act on it; the cache holds paid answers, so it is never to be deleted."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("full" in text or "disk I/O" in text):
            return UserError(f"the answer cache cannot grow: the disk is full ({text}); every answer stored before is "
                             "kept in it: free space on that disk (or give --cache on another one) and run the same "
                             "command again: it sends only the requests not stored", self.path)
        if isinstance(exc, sqlite3.OperationalError):
            return UserError(f"the answer cache cannot be written ({text}); the answers stored before are kept: fix "
                             "that and run the same command again", self.path)
        return UserError(f"is not an answer cache that can be read (SQLite: {text}); it may hold paid answers, so "
                         "move it away rather than deleting it, and give --cache for a new one", self.path)

    def get(self, prompt: str, settings: GenerationSettings) -> Answer | None:
        row = self.fetch_one("SELECT raw, status, prompt_tokens, completion_tokens FROM answers WHERE key = ?",
                             (cache_key(prompt, settings),))
        return None if row is None else Answer(row[0], row[1], int(row[2]), int(row[3]))

    def put(self, prompt: str, settings: GenerationSettings, answer: Answer) -> None:
        """Store one answer in its own transaction: it is kept whatever happens next."""
        if answer.status == "failed":
            raise ValueError("a failed request is not an answer; it is retried, not cached")
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cache_key(prompt, settings), settings.endpoint.rstrip("/"), settings.model, settings.settings_json,
                 prompt, answer.raw, answer.status, answer.prompt_tokens, answer.completion_tokens))


class LeaseLost(UserError):
    """This run's lease on its unit was revoked or taken over: it must not send another request."""


class UnitLease:
    """Which run of a unit may send its requests: one holder at a time, in the answer cache's file.

    The holder renews it (``keep``, counted in ``beats``) before each request and every ``seconds / 4`` while waiting.
    A holder silent for ``seconds`` by the waiting run's clock is taken over, or revoked by the orchestrator; its next
    ``keep`` raises ``LeaseLost`` before it sends anything, so a paused run pays for nothing the next one answered."""

    def __init__(self, cache: AnswerCache, unit: str, holder: str, seconds: float, poll_seconds: float = 1.0) -> None:
        self.cache, self.unit, self.holder, self.seconds, self.poll_seconds = cache, unit, holder, seconds, poll_seconds
        self.every = seconds / 4

    def __enter__(self) -> "UnitLease":
        seen, since = None, time.monotonic()
        while True:
            current = self._take(seen if time.monotonic() - since > self.seconds else None)
            if current is None:
                return self
            if current != seen:
                seen, since = current, time.monotonic()
            time.sleep(self.poll_seconds)

    def _take(self, stale: tuple | None) -> tuple | None:
        """Take the lease if it is free, or still ``stale`` (held, not renewed since); else the holder's state."""
        with self.cache.transaction() as db:
            db.execute("BEGIN IMMEDIATE")
            self._refuse_if_revoked()
            row = db.execute("SELECT holder, beats FROM leases WHERE unit = ?", (self.unit,)).fetchone()
            if row is not None and row[0] not in (None, self.holder) and tuple(row) != stale:
                return tuple(row)
            db.execute("INSERT INTO leases VALUES (?, ?, 0) ON CONFLICT (unit) DO UPDATE SET holder = excluded.holder, "
                       "beats = beats + 1", (self.unit, self.holder))
        return None

    def _refuse_if_revoked(self) -> None:
        revoked = self.cache.fetch_one("SELECT why FROM revoked WHERE holder = ?", (self.holder,))
        if revoked:
            raise LeaseLost(f"this run's lease was revoked ({revoked[0]}); it sends nothing more")

    def keep(self) -> None:
        """Renew the lease; ``LeaseLost`` once it is this run's no more."""
        with self.cache.transaction() as db:
            renewed = db.execute("UPDATE leases SET beats = beats + 1 WHERE unit = ? AND holder = ?",
                                 (self.unit, self.holder)).rowcount
        if not renewed:
            self._refuse_if_revoked()
            raise LeaseLost(f"this run ({self.holder}) did not renew its unit's lease for {self.seconds:g} s and "
                            "another run took it over; it sends nothing more")

    def __exit__(self, *exc: object) -> None:
        with self.cache.transaction() as db:
            db.execute("UPDATE leases SET holder = NULL WHERE unit = ? AND holder = ?", (self.unit, self.holder))


def lease_state(cache: AnswerCache, unit: str) -> tuple[str | None, int]:
    """The unit's lease holder (None: free) and how often it was renewed: a change is a sign of life."""
    row = cache.fetch_one("SELECT holder, beats FROM leases WHERE unit = ?", (unit,))
    return (None, 0) if row is None else (row[0], int(row[1]))


def revoke(cache: AnswerCache, unit: str, holder: str, why: str) -> None:
    """Take the lease from ``holder`` for good: its next ``keep`` (or its first ``UnitLease``) raises ``LeaseLost``."""
    with cache.transaction() as db:
        db.execute("INSERT OR IGNORE INTO revoked VALUES (?, ?)", (holder, why))
        db.execute("UPDATE leases SET holder = NULL WHERE unit = ? AND holder = ?", (unit, holder))

