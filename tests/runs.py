"""Running a plan in a test as the commands do (``kobbq.run.execute`` without its build folder and lock): prepared
(its inputs read and checked before the flow run), then the one flow."""

from __future__ import annotations


def run(plan):
    from flows.pipeline import Computed, build

    plan.prepare()
    return build(prepared=Computed(plan))
