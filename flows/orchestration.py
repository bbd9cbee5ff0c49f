"""What ``kobbq eval run --deployment`` keeps true on the Prefect server while units run on a work pool, whatever
crashes or pauses: a lost unit run is found by its lease in the answer cache (``UnitWatch``), a silent server waited
for (``ServerLink``), a stopped command's run marked Crashed (``marked_on_signal``, ``take_over``). What each failure
costs: docs/several-machines.md#what-a-crash-costs; the leases' design: docs/developing.md.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from uuid import UUID

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterTags
from prefect.states import Cancelled, Completed, Crashed
from prefect.utilities.asyncutils import run_coro_as_sync
from prefect.utilities.templating import resolve_variables

from core import interrupt
from core.errors import UserError
from tasks.evaluation.pool import CodePin, git_output, lost_state, resolve_ref

START_SECONDS = 600  # a unit's run that did not take its lease within this (from Pending) is lost
OUTAGE_SECONDS = 600  # how long a silent Prefect server is waited for
POLL_SECONDS = 5.0
EVALUATION_TAG = "kobbq-eval-"
ORCHESTRATOR_FLOW = "kobbq-model-runs"

T = TypeVar("T")


# --- the server's silence --------------------------------------------------------------------------

class ServerGone(UserError):
    """The Prefect server did not answer for ``OUTAGE_SECONDS`` (the units may still be running on the workers)."""


def server_unreachable(exc: BaseException) -> bool:
    """A failure that says nothing of the request, only that the server (or its database) is not there now."""
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code >= 500


class ServerLink:
    """Calls to the Prefect server that wait through an outage of up to ``outage_seconds``."""

    def __init__(self, outage_seconds: float = OUTAGE_SECONDS, poll_seconds: float = POLL_SECONDS) -> None:
        self.outage_seconds, self.poll_seconds = outage_seconds, poll_seconds

    def call(self, what: str, request: Callable[..., T]) -> T:
        """``request(client)`` with a sync Prefect client, retried while the server is unreachable."""
        down_since = None
        while True:
            try:
                with get_client(sync_client=True) as client:
                    return request(client)
            except Exception as exc:  # noqa: BLE001 (sorted by server_unreachable)
                if not server_unreachable(exc):
                    raise
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > self.outage_seconds:
                    raise ServerGone(f"the Prefect server did not answer for {self.outage_seconds:.0f} s "
                                     f"({what}: {exc.__class__.__name__}); the units keep running on the "
                                     "workers: run the same command again once the server is back") from exc
                time.sleep(self.poll_seconds)


# --- the orchestrating run ---------------------------------------------------------------------------

def take_over(link: ServerLink, evaluation: str, flow_run_id: UUID) -> str | None:
    """Tag this orchestrating run with its evaluation and mark Crashed the earlier ones still Running or Pending (this
    command holds the evaluation's locks, so none is alive); a line saying whom it took over from, if anyone."""

    tag = EVALUATION_TAG + evaluation

    def close(client: object) -> str | None:
        me = client.read_flow_run(flow_run_id)
        client.update_flow_run(flow_run_id, tags=sorted({*me.tags, tag}))
        earlier = sorted((run for run in client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[ORCHESTRATOR_FLOW])),
            flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[tag]))) if run.id != flow_run_id),
            key=lambda run: run.created, reverse=True)
        for run in earlier:
            if run.state is not None and not run.state.is_final():
                client.set_flow_run_state(run.id, Crashed(message=f"its command stopped without reporting (killed, "
                                                                  f"or its machine lost); run {me.name!r} took over"),
                                          force=True)
        if not earlier or earlier[0].state is None or earlier[0].state.is_completed():
            return None
        last = earlier[0]
        how = ("its command stopped without reporting" if not last.state.is_final()
               else f"{last.state.name}: {last.state.message or 'no message'}")
        return f"took over from {ORCHESTRATOR_FLOW} run {last.name!r} ({how})"

    return link.call("reading earlier runs of this evaluation", close)


def marked_on_signal(flow_run_id: UUID, budget_seconds: float = 5.0) -> AbstractContextManager[None]:
    """On SIGINT/SIGTERM mark this orchestrating run Crashed (the server gets ``budget_seconds``), then stop the
    command. Crashed, not Cancelled: Prefect would cancel the unit runs, its subflows, which keep running."""

    def report(signum: int) -> None:
        with suppress(Exception), get_client(sync_client=True) as client:  # best effort: the next command takes over
            client.set_flow_run_state(flow_run_id, Crashed(
                message=f"its command was stopped ({signal.Signals(signum).name}); the units keep running on the "
                        "workers; run the same command again to resume"), force=True)

    def handler(signum: int, _frame: object) -> None:
        reporter = threading.Thread(target=report, args=(signum,), daemon=True)
        reporter.start()
        reporter.join(budget_seconds)
        interrupt.stop(signum)  # its line says what keeps running (interrupt.leaves, set by the command)

    return interrupt.handling_signals(handler)


# --- unit runs ---------------------------------------------------------------------------------------

class EvaluationCancelled(UserError):
    """The evaluation's run was cancelled in Prefect: its units were stopped."""


@dataclass
class UnitWatch:
    """One unit run, watched for an end, for being lost, or for its evaluation being cancelled (module docstring)."""

    link: ServerLink
    flow_run_id: UUID
    evaluation_run: UUID | None  # the orchestrating run: cancelled, it stops this unit
    lease: Callable[[], tuple[str | None, int]]  # the unit's lease: its holder and renewals
    revoke: Callable[[str, str], None]  # take the lease from a holder for good, saying why
    lost_after: float
    is_finished: Callable[[], bool]  # the answer cache holds every answer of the unit
    start_seconds: float = START_SECONDS
    poll_seconds: float = POLL_SECONDS

    def wait(self) -> object:
        """Wait for the run to end; mark it lost (Crashed, or Completed if its answers are all in) when it is."""
        me, seen, changed_at = str(self.flow_run_id), None, time.monotonic()
        while True:
            run, cancelled = self.link.call("reading a unit run", self._read)
            if cancelled:
                self.stop(run)
            if run.state is None or run.state.is_final():
                return run
            now, sign = time.monotonic(), (run.state.type, *self.lease())
            if sign != seen:
                seen, changed_at = sign, now
            holding = sign[1] == me
            if (run.state.is_running() or run.state.is_pending()) and \
                    now - changed_at > (self.lost_after if holding else self.start_seconds):
                self.mark_lost(run, holding, now - changed_at)
                continue
            time.sleep(self.poll_seconds)

    def _read(self, client: object) -> tuple[object, bool]:
        run = client.read_flow_run(self.flow_run_id)
        state = client.read_flow_run(self.evaluation_run).state if self.evaluation_run else None
        return run, state is not None and (state.is_cancelling() or state.is_cancelled())

    def mark_lost(self, run: object, holding: bool, silent: float) -> None:
        completed, message = lost_state(self.is_finished(), holding, silent)
        state = Completed(message=message) if completed else Crashed(message=message)
        self.revoke(str(run.id), f"taken for lost: {message}")  # first: a run only paused stops there
        self.link.call("marking a lost unit run", lambda client: client.set_flow_run_state(run.id, state, force=True))

    def stop(self, run: object) -> None:
        """The evaluation was cancelled: revoke the lease (the run stops before its next request), mark it Cancelled."""
        self.revoke(str(run.id), "its evaluation was cancelled")
        if run.state is not None and not run.state.is_final():
            self.link.call("cancelling a unit run", lambda client: client.set_flow_run_state(
                run.id, Cancelled(message="its evaluation was cancelled; it sends no more requests"), force=True))
        raise EvaluationCancelled("the evaluation was cancelled")


# --- the code every unit runs ------------------------------------------------------------------------

def pin_code(link: ServerLink, deployment: object) -> CodePin:
    """Resolve the deployment's code to one commit: ``kobbq_ref`` of ``kobbq_repository``, or the shared folder's HEAD
    (which must have no uncommitted change: the units would run code no commit names)."""

    for step in deployment.pull_steps or []:
        (name, inputs), = step.items()
        if name.endswith("git_clone"):
            inputs = run_coro_as_sync(resolve_variables(inputs))
            ref = link.call("reading kobbq_ref", lambda client: client.read_variable_by_name("kobbq_ref"))
            if ref is None or not str(ref.value).strip():
                raise UserError("the Prefect variable kobbq_ref is not set: set it to the branch, tag or commit the "
                                "units run (prefect variable set kobbq_ref main)")
            return CodePin(resolve_ref(inputs["repository"], str(ref.value).strip()),
                           f"{inputs['repository']} at {ref.value}", clone=True)
        if name.endswith("set_working_directory"):
            folder = Path(str(run_coro_as_sync(resolve_variables(inputs))["directory"]))
            if not (folder / ".git").exists():
                return CodePin(None, str(folder), clone=False)
            pin = CodePin(git_output(folder, "rev-parse", "HEAD"), str(folder), clone=False, folder=str(folder))
            pin.check()
            return pin
    return CodePin(None, "the deployment's own code", clone=False)


def notice(line: str) -> None:
    """A line for the person running the command (standard error: the answers' summary is standard output)."""
    print(line, file=sys.stderr, flush=True)
