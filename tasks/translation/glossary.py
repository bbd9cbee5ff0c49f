"""The profile's glossary of cultural substitutions (ko: Walmart -> 이마트; ja: neighborhood association -> 町内会).

The paper's translator replaced US-specific entities with ones of the culture; the glossary makes the machine draft do
it already, so that the post-editor starts from the adapted text, and every substitution is recorded."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import Location, UserError
from core.tables import read_csv_table
from core.profile import Profile

COLUMNS = ("source", "target", "note")


def term_pattern(term: str) -> re.Pattern[str]:
    """A glossary term as a whole word or phrase, case-insensitive (``Walmart``, ``rugby``)."""
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True)
class GlossaryEntry:
    source: str
    target: str
    note: str
    row: int


@dataclass(frozen=True)
class Glossary:
    path: str
    entries: tuple[GlossaryEntry, ...]

    @property
    def targets(self) -> dict[str, str]:
        return {e.source: e.target for e in self.entries}

    @property
    def fingerprint(self) -> str:
        """Part of the cache key: a changed glossary must not reuse drafts made with the old one."""
        body = "\n".join(f"{e.source}\t{e.target}" for e in sorted(self.entries, key=lambda e: e.source))
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16] if self.entries else ""

    def terms_in(self, text: str) -> list[GlossaryEntry]:
        """The entries whose source term occurs in ``text`` (whole words, any case)."""
        return [e for e in self.entries if term_pattern(e.source).search(text)]


EMPTY_GLOSSARY = Glossary("", ())


def load_glossary(path: Path) -> Glossary:
    """Read a glossary CSV; a missing column, an empty cell or a duplicate term is a UserError with its row."""
    entries: list[GlossaryEntry] = []
    seen: dict[str, int] = {}
    for row_number, row in read_csv_table(path, COLUMNS, "a glossary"):
        source, target = row["source"].strip(), row["target"].strip()
        for column, value in (("source", source), ("target", target)):
            if not value:
                raise UserError("empty cell", Location(str(path), row_number, column))
        if source.lower() in seen:
            raise UserError(f"term {source!r} is already defined in row {seen[source.lower()]}",
                            Location(str(path), row_number, "source"))
        seen[source.lower()] = row_number
        entries.append(GlossaryEntry(source, target, row["note"].strip(), row_number))
    return Glossary(str(path), tuple(entries))


def profile_glossary(profile: Profile) -> Glossary:
    """The glossary in the profile's folder; none there means no substitutions."""
    path = profile.file("glossary")
    return load_glossary(path) if path.exists() else EMPTY_GLOSSARY
