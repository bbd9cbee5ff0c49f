"""Running a plan in a test as the commands do (``tasks.pipeline.run.execute`` without its build folder and lock):
prepared (its inputs read and checked before the flow run), then one flow run."""

from __future__ import annotations


def run(plan):
    from flows.pipeline import run_command

    plan.prepare()
    return run_command(plan, "test", {})
