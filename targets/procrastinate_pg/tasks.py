"""procrastinate_pg tasks: what the producer (control.py, in the suite) and procrastinate's own worker
(worker.py, loaded by `procrastinate --app=worker.app worker`) share, as a procrastinate application's
tasks module is shared by the code that defers and the worker that runs.

`app_for` builds the App on a connector, `define_task` registers the one task on it, `chaos_job(job,
payload)`: the suite's job id is its `job` argument, so it is in procrastinate's own row
(`procrastinate_jobs.args`, jsonb). The task runs the handler, then sends the `effect` probe, the job's
external side effect. Its `retry` is the contract's max_attempts less one: procrastinate's documented
"Retry N times (so N+1 attempts total)" (docs/howto/advanced/retry.md), with no wait between attempts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import procrastinate

from chaos import probe
from chaos.worker import log, run_handler

TASK = "chaos_job"  # the task's name in procrastinate_jobs.task_name
QUEUE = "chaos"  # the one queue the suite's jobs go to


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once (the protocol's rule:
    procrastinate catches what a task or a middleware raises, logs it and carries on)."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


def attempt_of(job: Any) -> int:
    """Which execution of its job this is, 1 for the first: procrastinate's `attempts` column counts the
    executions that ended (a retry and a finish add one to it), so a fetched job's is the ones before."""
    return int(job.attempts) + 1


def token_of(job: Any) -> str:
    """The execution's token: procrastinate's job id (kept across retries) and the attempt."""
    return f"{job.id}:{attempt_of(job)}"


def suite_job(job: Any) -> str | None:
    """The suite's job id, from the job's own arguments; None for a job that is not the suite's."""
    value = (job.task_kwargs or {}).get("job")
    return str(value) if job.task_name == TASK and value is not None else None


def define_task(app: procrastinate.App, max_attempts: int) -> Any:
    """Register chaos_job on `app`: the producer defers it, the worker runs it."""

    @app.task(name=TASK, queue=QUEUE, retry=max_attempts - 1, pass_context=True)
    def chaos_job(context: procrastinate.JobContext, job: str, payload: dict[str, Any]) -> str:
        run_handler(payload)  # a poison job raises JobFailed here, before any effect
        report(lambda: probe.effect(job, token_of(context.job), fence=attempt_of(context.job)))
        return job

    return chaos_job
