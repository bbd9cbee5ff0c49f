"""Findings: validation problems with a severity and a location a person can go to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.errors import Location, UserError

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    where: Location
    code: str  # stable short name, e.g. "slot-undeclared", so reports and tests can group them
    message: str

    def render(self) -> str:
        return f"{self.severity}: {self.where}: {self.message} [{self.code}]"


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def warnings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "warning"]


class FindingsError(UserError):
    """Bad input with one or more problems, the one way findings become an error: one paragraph listing the first
    ``limit`` (file, sheet, row, column each), so the person fixes them in one pass."""

    def __init__(self, what: str, findings: list[Finding], consequence: str, limit: int = 30, hint: str = "") -> None:
        self.findings = findings
        lines = [f"  {f.where}: {f.message}" for f in findings[:limit]]
        if len(findings) > limit:
            lines.append(f"  ... and {len(findings) - limit} more{hint}")
        super().__init__(f"{len(findings)} problem(s) in {what}; {consequence}:\n" + "\n".join(lines))


def raise_if_errors(what: str, findings: list[Finding], consequence: str, limit: int = 30, hint: str = "") -> None:
    """Stop with a ``FindingsError`` when any finding is an error (warnings never stop anything)."""
    if found := errors(findings):
        raise FindingsError(what, found, consequence, limit, hint)
