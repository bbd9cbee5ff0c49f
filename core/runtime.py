"""Process settings that must be in place before Prefect or Great Expectations is imported.

Defaults only (``setdefault``): a user's own environment always wins.
"""

from __future__ import annotations

import os

QUIET_OFFLINE = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    # Prefect logs a failed task or flow with its traceback at ERROR; the command prints the error in one
    # paragraph instead, and `kobbq --debug` shows Prefect's log (DEBUG_PREFECT_LOGGING).
    "PREFECT_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",  # hides harmless CancelledError tracebacks at shutdown
    "PREFECT_INTERNAL_LOGGING_LEVEL": "CRITICAL",  # its workers' errors when the server is gone: the command says it
    # A flow run's log (its progress lines, its states) goes to its server, not to the console (it has its own).
    "PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL": "INFO",
    # A first run on a fresh machine creates the database; the default 20 s can be too short.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "GX_ANALYTICS_ENABLED": "false",
}

DEBUG_PREFECT_LOGGING = {"PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
                         "PREFECT_INTERNAL_LOGGING_LEVEL": "ERROR"}


def configure_environment(debug: bool = False) -> None:
    """The defaults above; ``debug`` (``kobbq --debug``): with Prefect's warnings and errors, tracebacks included."""
    for name, value in (QUIET_OFFLINE | DEBUG_PREFECT_LOGGING if debug else QUIET_OFFLINE).items():
        os.environ.setdefault(name, value)
