"""Model answers at scale as Prefect flows over (model x prompt[, shard]) units (``tasks.evaluation.pool.RunUnit``):
``model_prompt_flow`` answers one unit under its lease and a slot of the endpoint's concurrency limit;
``model_runs_flow`` maps every unit, in its own process or as runs of a deployment (``flows.orchestration``), then
writes each model's answer files from the cache. Workers must reach ``prepared`` and ``out`` at the same paths.
"""

from __future__ import annotations

import itertools
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from uuid import UUID

from prefect import flow, task, unmapped
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency
from prefect.runtime import flow_run as current_run
from prefect.states import Cancelled, State

from core.errors import UserError
from flows.orchestration import (START_SECONDS, EvaluationCancelled, ServerLink, UnitWatch, marked_on_signal, notice,
                                 pin_code, take_over)
from tasks.evaluation.answer_cache import Answer, AnswerCache, GenerationSettings, LeaseLost, UnitLease
from tasks.evaluation.pool import CodePin, RunUnit, check_code, evaluation_key, limit_name
from tasks.evaluation.runs import (RunSummary, answer_requests, cached_answers, load_requests, model_slug,
                                   write_answer_files)

LIMIT_LEASE_SECONDS = 60  # a dead unit's slot of the endpoint's limit lapses after this (Prefect's shortest lease)
UNIT_FLOW = "kobbq-model-run"
CODE_ROOT = Path(__file__).resolve().parents[1]  # the checkout (or clone) this module was imported from


class RequestsFailed(Exception):
    """Some requests of a unit still fail after the client's retries; Prefect retries the unit later."""


def _retry_unless_user_error(task, task_run, state) -> bool:  # noqa: ANN001 (Prefect's callback signature)
    """A failed unit is retried, unless a refused key or a missing model failed it: retrying cannot help."""
    return not isinstance(state.result(raise_on_failure=False), UserError)


@task(name="answer-model-prompt", retries=2, retry_delay_seconds=30, retry_condition_fn=_retry_unless_user_error,
      cache_policy=NO_CACHE)
def answer_unit(unit: RunUnit, holder: str | None = None) -> RunSummary:
    """The unit's requests; with a ``holder`` (a unit run), under the unit's lease, taken before the answer
    cache is read: a run that waited for another run of the same unit sends only what that one left."""
    requests = unit.requests()
    with AnswerCache(Path(unit.cache)) as cache, \
            (UnitLease(cache, unit.key, holder, unit.lost_after) if holder else nullcontext()) as lease:
        with concurrency(limit_name(unit.endpoint), occupy=1, strict=False, lease_duration=LIMIT_LEASE_SECONDS):
            _, summary = answer_requests(requests, unit.model_client(), cache, unit.concurrency, progress=False,
                                         lease=lease)
    if summary.failed:
        raise RequestsFailed(f"{unit.describe()}: {summary.failed} request(s) failed "
                             f"({'; '.join(summary.errors[:2])})")
    return summary


@flow(name=UNIT_FLOW)
def model_prompt_flow(unit: RunUnit) -> RunSummary | State:
    """One model on one prompt (what a worker runs when the fan-out goes through a deployment)."""
    check_code(unit.code_commit, CODE_ROOT)
    try:
        return answer_unit(unit, holder=str(current_run.id))
    except LeaseLost as exc:  # its evaluation took it for lost, or was cancelled: it ends as the evaluation said
        return Cancelled(message=str(exc))


@task(name="run-deployed-unit", cache_policy=NO_CACHE)
def run_deployed_unit(deployment: str, unit: RunUnit, job_variables: dict, pin: CodePin,
                      evaluation_run: UUID | None = None, start_seconds: float = START_SECONDS,
                      attempts: int = 3) -> str:
    """Run the unit on the pool until the cache holds its answers; at most ``attempts`` runs waited for. Run ``n`` has
    the idempotency key ``<unit key>-<n>``, so a resumed evaluation waits for a run still going instead of sending
    its requests twice; one ended before (an earlier evaluation's) is not a try."""
    from prefect.deployments import run_deployment

    if unit.unanswered() == 0:
        return "answers already cached"
    link = ServerLink()
    waited, ended = 0, []
    for attempt in itertools.count():
        pin.check()  # a shared folder changed since the pin: no run of it would start
        flow_run = link.call("starting a unit run", lambda _client: run_deployment(
            deployment, parameters={"unit": asdict(unit)}, timeout=0, as_subflow=True,
            idempotency_key=f"{unit.key}-{attempt}", job_variables=job_variables))
        earlier = flow_run.state is not None and flow_run.state.is_final()
        flow_run = UnitWatch(link, flow_run.id, evaluation_run, unit.lease, unit.revoke, unit.lost_after,
                             lambda: unit.unanswered() == 0, start_seconds).wait()
        if unit.unanswered() == 0:
            return flow_run.name
        ended.append(flow_run)
        waited += 0 if earlier else 1
        if waited >= attempts:
            break
    raise RequestsFailed(f"{unit.describe()}: requests still unanswered after {describe_runs(ended[-attempts:])}")


def describe_runs(runs: list) -> str:
    """``runs 'a', 'b' Failed (the same message once)``: runs that ended alike, named together."""
    alike: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        state = (run.state.name, run.state.message or "") if run.state else ("no state", "")
        alike.setdefault(state, []).append(repr(run.name))
    return "; ".join(f"run{'s' if len(names) > 1 else ''} {', '.join(names)} {state}" + (f" ({message})" if message
                                                                                          else "")
                     for (state, message), names in alike.items())


@task(name="write-model-answers", cache_policy=NO_CACHE)
def write_model_answers(prepared: Path, settings: GenerationSettings, prompts: list[int], cache_path: Path,
                        out: Path) -> list[dict]:
    """The model's answer files, from the cache; its runs-table rows, per prompt: answers by status, tokens spent."""
    requests = load_requests(prepared, prompts)
    with AnswerCache(cache_path) as cache:
        found = cached_answers(requests, settings, cache)
    answers = [found.get(r.prompt, Answer("", "failed")) for r in requests]
    write_answer_files(requests, answers, settings.model, out / model_slug(settings.model))
    rows = []
    for prompt_id in sorted({r.prompt_id for r in requests}):
        mine = [a for r, a in zip(requests, answers) if r.prompt_id == prompt_id]
        statuses = Counter(a.status for a in mine)
        rows.append({"model": settings.model, "prompt": prompt_id, "requests": len(mine), "ok": statuses["ok"],
                     "empty": statuses["empty"], "malformed": statuses["malformed"], "failed": statuses["failed"],
                     "tokens_in": sum(a.prompt_tokens for a in mine),
                     "tokens_out": sum(a.completion_tokens for a in mine)})
    return rows


def unit_job_variables(deployment: object, pin: CodePin) -> dict:
    """The deployment's job variables, with the pinned commit: a cloning deployment's pull step reads it from
    ``KOBBQ_COMMIT`` (``prefect.yaml``)."""
    variables = dict(deployment.job_variables or {})
    if pin.clone and pin.commit:
        variables["env"] = {**(variables.get("env") or {}), "KOBBQ_COMMIT": pin.commit}
    return variables


@flow(name="kobbq-model-runs")
def model_runs_flow(template: RunUnit, models: list[str], out: Path, prompts: list[int] | None = None,
                    endpoint_limit: int | None = None, deployment: str | None = None,
                    start_seconds: float = START_SECONDS) -> list[dict] | State:
    """Every (model, prompt[, shard]) run of a prepared release from ``template`` (absolute paths: the workers read
    them); the runs table (also an artifact). A unit is done when the answer cache says so, whatever its runs say."""
    prepared, cache_path, out = Path(template.prepared), Path(template.cache), Path(out).resolve()
    prompts = prompts or sorted({r.prompt_id for r in load_requests(prepared)})
    if endpoint_limit:  # create (or reset) the endpoint's global concurrency limit on the Prefect server
        with get_client(sync_client=True) as client:
            client.upsert_global_concurrency_limit_by_name(limit_name(template.endpoint), endpoint_limit)
    units = [replace(template, model=m, prompt_id=p, shard=shard)
             for m in models for p in prompts for shard in range(template.shards)]
    link = ServerLink()
    if deployment:
        try:
            problems = run_on_pool(link, deployment, units, start_seconds)
        except EvaluationCancelled as exc:  # the run ends Cancelled (not Failed); calling the flow raises exc
            return Cancelled(message=str(exc), data=exc)
    else:
        problems = wait_for_units(units, answer_unit.map(units))
    unfinished = [u for u in units if u.unanswered()]
    table: list[dict] = []
    for model in models:
        table += write_model_answers(prepared, replace(template, model=model).settings, prompts, cache_path, out)
    link.call("publishing the runs table", lambda _client: create_table_artifact(
        key="kobbq-model-runs", table=table,
        description=f"{len(units)} (model x prompt) runs on {template.endpoint}; {len(unfinished)} unfinished"))
    if unfinished:
        said = [problems.get(u.key) or f"{u.describe()}: {u.unanswered()} prompt(s) unanswered" for u in unfinished]
        more = f" (and {len(said) - 3} more)" if len(said) > 3 else ""
        raise RequestsFailed(f"{len(unfinished)} of {len(units)} units did not finish: {' | '.join(said[:3])}{more}")
    return table


def run_on_pool(link: ServerLink, deployment: str, units: list[RunUnit], start_seconds: float) -> dict[str, str]:
    """Every unit as a run of ``deployment``; what went wrong, by unit key. Earlier commands' unfinished runs are closed
    (``take_over``); a signal marks this run Crashed; cancelled in Prefect, it stops every unit."""
    me = UUID(current_run.id)
    with marked_on_signal(me):
        took_over = take_over(link, evaluation_key([u.key for u in units]), me)
        if took_over:
            notice(took_over)
        target = link.call("reading the deployment", lambda client: client.read_deployment_by_name(deployment))
        pin = pin_code(link, target)
        if pin.commit:
            notice(f"code: {pin.where} = commit {pin.commit[:12]}, for every unit of this evaluation")
        pinned = [replace(u, code_commit=pin.commit) for u in units]
        problems = wait_for_units(units, run_deployed_unit.map(
            deployment, pinned, job_variables=unmapped(unit_job_variables(target, pin)), pin=unmapped(pin),
            evaluation_run=me, start_seconds=start_seconds))
        if problems:  # cancelled in Prefect (its UI), its units stopped: say so (the flow ends Cancelled)
            state = link.call("reading the evaluation's run", lambda client: client.read_flow_run(me).state)
            if state is not None and (state.is_cancelling() or state.is_cancelled()):
                stopped = [u for u in units if u.unanswered()]
                raise EvaluationCancelled(f"the evaluation was cancelled in Prefect: its {len(stopped)} unfinished "
                                          "unit run(s) were stopped, each before its next request (the answers "
                                          "received are kept in the answer cache); nothing of it keeps running: run "
                                          "the same command again to resume")
            pin.check()  # the units refused a changed shared folder: say so in one line
    return problems


def wait_for_units(units: list[RunUnit], futures: list) -> dict[str, str]:
    """Wait for every unit's task; what stopped the ones that failed (their exceptions' messages), by unit key
    (reported, not raised: the answer cache decides)."""
    for future in futures:
        future.wait()
    return {unit.key: str(future.result(raise_on_failure=False)) for unit, future in zip(units, futures)
            if future.state.is_failed()}
