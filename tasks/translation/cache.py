"""The translation cache: an SQLite file keyed by everything that changes DeepL's answer, each batch committed as it
is answered, so nothing is paid for twice and a run replays offline. It records the glossary mode a live run chose:
the texts sent differ between modes, so a reader without DeepL must ask for the keys the paid run stored."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.sqlite_store import SqliteStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS translations (
    key TEXT PRIMARY KEY,
    sent TEXT NOT NULL,
    source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL,
    glossary TEXT NOT NULL,
    options TEXT NOT NULL,
    translated TEXT NOT NULL,
    billed_characters INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS glossary_modes (
    source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL,
    glossary TEXT NOT NULL,
    glossary_mode TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (source_lang, target_lang, glossary)
)
"""


@dataclass(frozen=True)
class RequestSettings:
    """Everything besides the text that decides the translation (and so the cache key)."""

    source_lang: str
    target_lang: str
    glossary: str = ""  # glossary fingerprint, "" for none
    options: tuple[tuple[str, str], ...] = ()  # e.g. (("formality", "default"), ("tag_handling", "xml"))

    @property
    def options_json(self) -> str:
        return json.dumps(dict(self.options), sort_keys=True)


def cache_key(sent: str, settings: RequestSettings) -> str:
    payload = json.dumps([sent, settings.source_lang.upper(), settings.target_lang.upper(), settings.glossary,
                          settings.options_json], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedTranslation:
    translated: str
    billed_characters: int


def unreadable(path: Path, exc: sqlite3.DatabaseError) -> UserError:
    """A damaged cache file: it may hold paid translations, so it is kept as it is. A full disk is said as such."""
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
        return UserError(f"the translation cache cannot grow: the disk is full ({exc}); every translation stored "
                         "before is kept in it: free space on that disk and run the same command again: it sends "
                         "only what is not stored", path)
    return UserError(f"not a readable translation cache ({exc}); it may hold paid DeepL translations, so it is "
                     "left as it is: restore it from a copy, or move it away to start an empty one", path)


def check_readable(path: Path) -> None:
    """``path`` opens as a translation cache, read only: a damaged file is found before anything runs, named as the user
    gave it (not as the copy a pipeline would make of it)."""
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        db.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:
        raise unreadable(path, exc) from None
    finally:
        db.close()


class TranslationCache(SqliteStore):
    """The translations and glossary modes DeepL was paid for (see ``SqliteStore``)."""

    schema = _SCHEMA

    def error(self, exc: sqlite3.DatabaseError) -> UserError:
        return unreadable(self.path, exc)

    def get_many(self, sents: Iterable[str], settings: RequestSettings) -> dict[str, CachedTranslation]:
        """The cached translations of the given texts (text as sent -> translation); misses are absent."""
        found: dict[str, CachedTranslation] = {}
        for sent in dict.fromkeys(sents):
            row = self.fetch_one("SELECT translated, billed_characters FROM translations WHERE key = ?",
                                 (cache_key(sent, settings),))
            if row is not None:
                found[sent] = CachedTranslation(row[0], int(row[1]))
        return found

    def put_many(self, results: dict[str, CachedTranslation], settings: RequestSettings) -> None:
        """Store one answered batch in one transaction: it is kept even if the next batch fails."""
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO translations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(cache_key(sent, settings), sent, settings.source_lang.upper(), settings.target_lang.upper(),
                  settings.glossary, settings.options_json, r.translated, r.billed_characters)
                 for sent, r in sorted(results.items())],
            )

    def recorded_mode(self, source_lang: str, target_lang: str, glossary: str) -> tuple[str, str] | None:
        """How the glossary was applied to this pair when its drafts were paid for, (mode, why), or None: a live run's
        recorded choice, else (a cache from before choices were kept) the mode of most of its stored translations."""
        key = (source_lang.upper(), target_lang.upper(), glossary)
        row = self.fetch_one("SELECT glossary_mode, reason FROM glossary_modes WHERE source_lang = ? AND "
                             "target_lang = ? AND glossary = ?", key)
        if row is not None:
            return str(row[0]), str(row[1])
        with self.transaction() as db:
            rows = db.execute("SELECT options FROM translations WHERE source_lang = ? AND target_lang = ? AND "
                              "glossary = ?", key).fetchall()
        counts = Counter(mode for (options,) in rows if (mode := json.loads(options).get("glossary_mode")))
        if not counts:
            return None
        mode = max(sorted(counts), key=counts.__getitem__)
        return mode, f"the cache holds {counts[mode]} translation(s) of this pair made with glossary mode {mode!r}"

    def record_mode(self, source_lang: str, target_lang: str, glossary: str, mode: str, reason: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO glossary_modes VALUES (?, ?, ?, ?, ?)",
                       (source_lang.upper(), target_lang.upper(), glossary, mode, reason))
