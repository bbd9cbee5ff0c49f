"""The release checks' result as the build holds it: one outcome per expectation, written to ``validation.json``
(our own deterministic summary: Great Expectations' raw result carries run IDs and times) and ``validation.md``
(the page the dataset card links). No pandas and no Great Expectations here: the build reads the child's report
with this module alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import UserError


@dataclass(frozen=True)
class CheckOutcome:
    sample_set: str  # "all" or "test"
    expectation: str  # Great Expectations' expectation type
    column: str
    rule: str  # what it checks, in words
    success: bool
    unexpected_count: int
    examples: list[str] = field(default_factory=list)  # sample_ids (or values) that break it

    def render(self) -> str:
        examples = f"; e.g. {', '.join(self.examples)}" if self.examples else ""
        return f"{self.rule} [{self.expectation} on {self.sample_set}.{self.column}]: {self.unexpected_count} row(s){examples}"


@dataclass(frozen=True)
class ValidationReport:
    success: bool
    outcomes: list[CheckOutcome]

    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.success]

    def summary(self) -> str:
        """``46 of 46 expectations passed``: the suite's result, in words."""
        return f"{len(self.outcomes) - len(self.failures())} of {len(self.outcomes)} expectations passed"

    def as_json(self) -> dict[str, object]:
        return {"success": self.success, "expectations": len(self.outcomes),
                "failed": len(self.failures()),
                "results": [o.__dict__ for o in self.outcomes]}


class ReleaseValidationError(UserError):
    def __init__(self, report: ValidationReport) -> None:
        lines = [f"the release failed {len(report.failures())} of {len(report.outcomes)} checks; "
                 "nothing was published:"]
        lines += [f"  - {o.render()}" for o in report.failures()]
        super().__init__("\n".join(lines))
        self.report = report


def summary_markdown(report: ValidationReport) -> str:
    """``validation.md``: every expectation and its result, a failure with the first rows that break it."""
    lines = ["| set | rule | expectation | result |", "|---|---|---|---|"]
    for o in report.outcomes:
        examples = f"; e.g. {', '.join(o.examples)}".replace("|", "\\|") if o.examples else ""
        result = "pass" if o.success else f"FAIL: {o.unexpected_count} row(s){examples}"
        lines.append(f"| {o.sample_set} | {o.rule} | `{o.expectation}` {o.column} | {result} |")
    return "\n".join(lines) + "\n"


def write_results(report: ValidationReport, folder: Path) -> None:
    (folder / "validation.json").write_text(json.dumps(report.as_json(), ensure_ascii=False, indent=2,
                                                       sort_keys=True) + "\n", encoding="utf-8")
    (folder / "validation.md").write_text(summary_markdown(report), encoding="utf-8")


def read_results(folder: Path) -> ValidationReport:
    data = json.loads((folder / "validation.json").read_text(encoding="utf-8"))
    return ValidationReport(bool(data["success"]), [CheckOutcome(**item) for item in data["results"]])
