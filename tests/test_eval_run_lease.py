"""A unit's lease in the answer cache: one run of a unit sends at a time, and a run whose lease was revoked
or taken over (it was paused, or taken for lost) sends nothing more, whatever it had queued.

The report's case: a unit run stopped (SIGSTOP) for 200 s was taken for lost, a second run answered its
prompts, then the first resumed and sent its whole queue again (63 of 72 prompts paid twice). The same
with a real cluster: ``tests/test_distributed_eval.py``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_openai import FAKE_KEY, FakeOpenAIServer
from tasks.evaluation.answer_cache import AnswerCache, GenerationSettings, LeaseLost, UnitLease, lease_state, revoke
from tasks.evaluation.client import OpenAIModel
from tasks.evaluation.runs import Request, answer_requests

UNIT = "unit-key"


def answers_stored(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])


def requests(n: int) -> list[Request]:
    return [Request(f"s{k}-0", f"s{k}", 1, f"question {k}?", {"A": "x", "B": "y", "C": "z"}, "A") for k in range(n)]


def test_a_revoked_run_stops_before_its_next_request_and_keeps_what_was_in_flight(tmp_path: Path) -> None:
    server = FakeOpenAIServer().start()
    server.state.delay_seconds, server.state.slow_times = 0.2, 10**9
    cache_path = tmp_path / "answer_cache.sqlite"
    model = OpenAIModel(GenerationSettings(server.url, "m"), FAKE_KEY)
    revoked_at: list[int] = []

    def revoke_after_four() -> None:  # the orchestrator, taking the run for lost from another process
        with AnswerCache(cache_path) as cache:
            while answers_stored(cache_path) < 4:
                time.sleep(0.02)
            revoke(cache, UNIT, "run-1", "taken for lost: its lease was not renewed")
            revoked_at.append(sum(server.state.received.values()))

    try:
        with AnswerCache(cache_path) as cache, UnitLease(cache, UNIT, "run-1", seconds=60) as lease:
            orchestrator = threading.Thread(target=revoke_after_four)
            orchestrator.start()
            with pytest.raises(LeaseLost, match=r"revoked \(taken for lost: its lease was not renewed\)"):
                answer_requests(requests(72), model, cache, concurrency=2, progress=False, lease=lease)
            orchestrator.join()
            cached = answers_stored(cache_path)
    finally:
        server.stop()
    received = sum(server.state.received.values())
    # After the revocation the server sees at most the requests already on their way (the concurrency: a
    # request is sent only after its check, and never more than two are out); every answer paid is cached.
    assert received <= revoked_at[0] + 2 and received < 72
    assert sum(server.state.answered.values()) == cached == received
    with AnswerCache(cache_path) as cache:
        assert lease_state(cache, UNIT) == (None, lease_state(cache, UNIT)[1])  # nobody holds it
        with pytest.raises(LeaseLost):  # a revoked run cannot take the lease again
            UnitLease(cache, UNIT, "run-1", seconds=60).__enter__()


def test_a_second_run_waits_for_the_holder_and_takes_over_a_silent_one(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    taken = threading.Event()

    def second_run() -> None:  # another process on the same cache
        with AnswerCache(path) as cache, UnitLease(cache, UNIT, "run-2", seconds=0.6, poll_seconds=0.05) as second:
            taken.set()
            second.keep()

    with AnswerCache(path) as cache:
        first = UnitLease(cache, UNIT, "run-1", seconds=0.6, poll_seconds=0.05).__enter__()
        waiter = threading.Thread(target=second_run)
        waiter.start()
        for _ in range(12):  # 1.2 s of renewals: the waiting run does not take a lease that is renewed
            first.keep()
            time.sleep(0.1)
        assert not taken.is_set()
        waiter.join(timeout=10)  # the first stops renewing (paused): after 0.6 s the second takes it over
        assert taken.is_set() and lease_state(cache, UNIT)[0] is None  # taken, then released by the second
        with pytest.raises(LeaseLost, match="another run took it over"):
            first.keep()  # resumed: it learns it before sending anything


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["take", "take over", "keep", "revoke", "release"]),
                          st.sampled_from(["run-1", "run-2", "run-3"])), max_size=25))
def test_whatever_happens_only_the_holder_renews_and_a_revoked_run_never_holds_again(tmp_path_factory,
                                                                                    steps: list) -> None:
    """The invariant behind "nothing paid twice": at every moment at most one run's ``keep`` succeeds (the one
    the lease names), and a run once revoked or taken over never sends again unless it takes the lease anew,
    which a revoked run cannot."""
    path = tmp_path_factory.mktemp("lease") / "c.sqlite"
    with AnswerCache(path) as cache:
        leases = {name: UnitLease(cache, UNIT, name, seconds=60) for name in ("run-1", "run-2", "run-3")}
        revoked: set[str] = set()
        for action, name in steps:
            lease = leases[name]
            try:
                if action == "take":
                    lease._take(None)  # takes a free lease only
                elif action == "take over":  # a waiter that saw the holder silent for a whole lease
                    lease._take(lease_state(cache, UNIT))
                elif action == "keep":
                    lease.keep()
                elif action == "revoke":
                    revoke(cache, UNIT, name, "taken for lost")
                    revoked.add(name)
                else:
                    lease.__exit__(None, None, None)
            except LeaseLost:
                assert action in ("take", "take over", "keep")
            holder = lease_state(cache, UNIT)[0]
            assert holder not in revoked
            kept = []
            for other, each in leases.items():
                try:
                    each.keep()
                    kept.append(other)
                except LeaseLost:
                    pass
            assert kept == ([holder] if holder else [])
