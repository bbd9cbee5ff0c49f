"""An SQLite file of paid work (DeepL's translations, a model's answers): kept on every error, never to be deleted."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from core.errors import UserError


class SqliteStore(AbstractContextManager):
    """A small SQLite store with its ``schema``; use as a context manager so the connection is closed. SQLite's own
    errors (a full disk, a file that is not a database) are the one line (``error``) saying what is kept and what to do.
    """

    schema = ""

    def __init__(self, path: Path, shared: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._storing():
            # Several processes (Prefect workers on one machine) may share the file: they wait for each other's writes.
            self._db = sqlite3.connect(self.path, timeout=60 if shared else 5)
            try:
                if shared:
                    self._db.execute("PRAGMA journal_mode=WAL")
                    # A commit survives the process being killed, not a power cut; it costs no fsync per write.
                    self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(self.schema)
                self._db.commit()
            except sqlite3.DatabaseError:
                self._db.close()
                raise

    def error(self, exc: sqlite3.DatabaseError) -> UserError:
        raise NotImplementedError

    @contextmanager
    def _storing(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self.error(exc) from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, in one transaction: committed when the block ends, rolled back if it raises."""
        with self._storing(), self._db:
            yield self._db

    def fetch_one(self, sql: str, parameters: tuple = ()) -> tuple | None:
        with self._storing():
            return self._db.execute(sql, parameters).fetchone()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if hasattr(self, "_db"):
            self._db.close()
