"""The decision log: one ``Decision`` row per (subject, rule), with the numbers that decided it, appended by every stage
that decides something, written to the release as CSV and Parquet, and read back by ``kobbq why``. Subject identifiers,
one convention for every stage: ``bbq:<BBQ category>:<Q_id>``, ``<Category>|<ID>`` (a template),
``<Category>|<ID>|<version>`` (a row), ``stereotype:<Category>:<text>``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.tables import delimited_text, read_records

# A path that is absolute or starts with ./ or ../, ending in a file name with an extension. Free text such as
# "1/2.5" or "Korea/U.S." does not match; ``source`` cells (always locations) also lose plain relative folders.
_ANCHORED_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:[\\/]|/|\.\.?/)(?:[\w.@+ -]+[\\/])*"
                            r"([\w@+-][\w.@+ -]*\.[A-Za-z0-9]+)")
_RELATIVE_PATH = re.compile(r"(?<![\w.])(?:[\w.@+-]+/)+([\w@+-][\w.@+-]*\.[A-Za-z0-9]+)")
DECISION_COLUMNS = ["stage", "subject_type", "subject", "rule", "outcome", "reason", "numbers", "override", "source"]
OUTCOME_DROP = "drop"


@dataclass(frozen=True)
class Decision:
    stage: str  # the pipeline stage that decided: labels | pretranslate | postedit | templates | survey-export | survey | release
    subject_type: str  # bbq_template | template | template_row | stereotype
    subject: str  # see the module docstring
    rule: str  # short stable rule name, e.g. "type2-two-thirds"
    outcome: str  # keep | drop | a value such as "ST" or "target:노인"
    reason: str  # one sentence a reviewer can read, with the numbers in it
    numbers: dict[str, object] = field(default_factory=dict)  # the inputs and the cut-off, machine-readable
    override: bool = False  # True when a curated override replaced the rule's outcome
    source: str = ""  # the input file (and row) the decision came from

    def as_row(self) -> dict[str, str]:
        portable = self.portable()  # its fields one by one: ``asdict`` would deep-copy the numbers, then dropped
        row = {column: getattr(portable, column) for column in DECISION_COLUMNS}
        row["numbers"] = numbers_text(self) or "{}"
        row["override"] = "true" if self.override else "false"
        return row

    def portable(self) -> Decision:
        """The decision as a log writes it: the paths of its source and reason reduced to file names, so that the
        log is the same wherever its inputs and the build folder are (``kobbq why`` names the file and row)."""
        return replace(self, reason=portable_text(self.reason),
                       source=_RELATIVE_PATH.sub(r"\1", portable_text(self.source)))

    def logged(self) -> Decision:
        """The decision as a log holds it (its numbers as JSON gives them back: a fraction as its text): what a
        reader of the written log sees, without reading it."""
        return replace(self, numbers=json.loads(json.dumps(self.numbers, ensure_ascii=False, default=str)))


def portable_text(text: str) -> str:
    """Absolute and ./ ../ paths in ``text`` reduced to their file names."""
    return _ANCHORED_PATH.sub(r"\1", text)


def numbers_text(decision: Decision) -> str:
    """A decision's numbers as its log writes them; blank when it has none (the log writes ``{}``)."""
    return json.dumps(decision.numbers, ensure_ascii=False, sort_keys=True, default=str) if decision.numbers else ""


def bbq_subject(bbq_category: str, q_id: int | str) -> str:
    return f"bbq:{bbq_category}:{q_id}"


def template_subject(category: str, template_id: int | str) -> str:
    return f"{category}|{template_id}"


def stereotype_subject(category: str, stereotype: str) -> str:
    return f"stereotype:{category}:{stereotype}"


def sort_decisions(decisions: Iterable[Decision]) -> list[Decision]:
    """A stable order, so the same inputs write the same log byte for byte."""
    return sorted(decisions, key=lambda d: (d.stage, d.subject_type, d.subject, d.rule, d.outcome))


def write_decisions_csv(decisions: Iterable[Decision], path: Path) -> None:
    rows = ([row[c] for c in DECISION_COLUMNS] for row in map(Decision.as_row, sort_decisions(decisions)))
    path.write_text(delimited_text(DECISION_COLUMNS, rows), encoding="utf-8", newline="")


def write_decisions_parquet(decisions: Iterable[Decision], path: Path) -> None:
    import pandas as pd

    rows = [d.as_row() for d in sort_decisions(decisions)]
    pd.DataFrame(rows, columns=DECISION_COLUMNS).astype("string").to_parquet(path, index=False)


def read_decisions(path: Path) -> list[Decision]:
    """Read a log written by ``write_decisions_csv``."""
    return [Decision(**{**row, "numbers": json.loads(row["numbers"] or "{}"), "override": row["override"] == "true"})
            for _, row in read_records(path)[1]]
