"""arq_redis worker: the settings module arq's own worker runs (target.toml's command is arq's CLI,
`python -m arq worker.WorkerSettings`, with the arq virtualenv's interpreter: venv-python.sh). Nothing here
takes, runs, retries or completes a job: arq's `Worker` does. This module only builds the worker's settings
(arq reads the class attributes named like `arq.worker.Worker`'s arguments) and reports what arq does,
through its documented hooks and the job function itself:

- `on_job_start` ("coroutine function to run on job start"): `claim`. arq has already set the job's
  in-progress key (`arq:in-progress:<id>`, a SET with a TTL in a MULTI/EXEC guarded by WATCH) and counted
  the try (`ctx['job_try']`), so the claim is committed; the token is arq's job id and the try.
- the job function `chaos_job` sends `effect` after the handler; if the handler fails it sends `abandon`
  ("handler failed") before it raises, and if arq cancels it (a SIGTERM shutdown, or the job's timeout) it
  sends `abandon` ("cancelled") before the cancellation reaches arq, which then re-queues it (shutdown) or
  records it failed (timeout).
- `after_job_end` ("coroutine function to run after job has ended and results have been recorded"): `ack`
  with ok null, for an execution whose function returned: arq, not this code, completed the job (its
  `finish_job` transaction), so whether that completion took effect is the control's to say from arq's
  result record (control.py's `completion`).
- `ready`: the worker's first poll of the queue that found nothing to start (`on_startup`, arq's hook that
  runs once the worker's pool is connected and before its poll loop, extends that pool's `zrangebyscore`,
  the poll's one read of the queue, to send `ready` when it returns no job id). arq has no start-up
  recovery to wait for (an abandoned job waits out its in-progress key's TTL); the point is an idle,
  polling worker.

The probe client is synchronous; every probe is sent from a thread (`asyncio.to_thread`, each thread with its
own connection) so that a probe a gate holds blocks only its own job, not arq's event loop. A probe the sink
refuses ends the process at once (arq would log the exception and carry on).

Settings from the target's params (CHAOS_TARGET_PARAMS): `max_jobs` (arq's default is 10; 1 here, one job
at a time per worker, as the other targets), `job_timeout_s` (arq's `job_timeout`, which also sets the
in-progress key's TTL: timeout + 10 s), `max_tries` (arq's default, 5) and `on_failure` (`fail`: an
exception fails the job, arq's default; `retry`: the function raises arq's documented `Retry`, so arq runs
it again until `max_tries`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any

from arq.connections import RedisSettings
from arq.worker import Retry, func

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, settings

CFG = settings()
NAMESPACE = os.environ.get("CHAOS_NAMESPACE", "")
FUNCTION = "chaos_job"


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


async def send(call: Callable[[], Any]) -> None:
    """A probe from a thread of its own, so a held probe does not stop arq's event loop."""
    await asyncio.to_thread(report, call)


def job_of(ctx: dict[str, Any]) -> str:
    """The suite's job id: arq's job id (the control enqueues with `_job_id=<namespace><job>`) less the run's
    namespace."""
    return str(ctx["job_id"])[len(NAMESPACE):]


def token_of(ctx: dict[str, Any]) -> str:
    """The execution's token: arq's job id (kept across tries) and its try."""
    return f"{ctx['job_id']}:{ctx['job_try']}"


async def chaos_job(ctx: dict[str, Any], job: str, payload: dict[str, Any]) -> str:
    """The job: the handler, then the effect. Returns the job id, which arq stores as the job's result."""
    cancel = threading.Event()  # wakes the handler's thread when arq cancels the job
    try:
        try:
            await asyncio.to_thread(run_handler, payload, cancel)  # a poison job raises JobFailed, before any effect
        except JobFailed:
            await send(lambda: probe.abandon(job, token_of(ctx), reason="handler failed"))
            if CFG.param("on_failure") == "retry":
                raise Retry() from None  # arq's documented way to run a job again (until max_tries)
            raise
        await send(lambda: probe.effect(job, token_of(ctx), fence=int(ctx["job_try"])))
    except asyncio.CancelledError:  # arq's shutdown cancels running jobs (and re-queues them); its timeout too
        # (arq then records the job failed), also while the effect's probe is out: the effect stands
        cancel.set()
        await send(lambda: probe.abandon(job, token_of(ctx), reason="cancelled"))
        raise
    ctx["chaos_returned"] = True
    return job


async def claimed(ctx: dict[str, Any]) -> None:
    await send(lambda: probe.claim(job_of(ctx), token_of(ctx), attempt=int(ctx["job_try"])))


async def completed(ctx: dict[str, Any]) -> None:
    if ctx.get("chaos_returned"):
        await send(lambda: probe.ack(job_of(ctx), token_of(ctx), None))


async def started(ctx: dict[str, Any]) -> None:
    """arq's on_startup: the worker's pool (`ctx['redis']`) sends `ready` after its first empty poll. arq's
    Worker has no fetch hook and its CLI builds the Worker itself, so the pool's read is extended in place."""
    pool = ctx["redis"]
    fetch = pool.zrangebyscore

    async def fetch_then_ready(*args: Any, **kwargs: Any) -> Any:
        job_ids = await fetch(*args, **kwargs)
        if not job_ids:
            pool.zrangebyscore = fetch  # the first empty poll only
            await send(probe.ready)
        return job_ids

    pool.zrangebyscore = fetch_then_ready


class WorkerSettings:
    """arq's worker settings (`arq worker.WorkerSettings`)."""

    functions = [func(chaos_job, name=FUNCTION, timeout=CFG.param("job_timeout_s"),
                      max_tries=CFG.param("max_tries"))]
    queue_name = NAMESPACE + "arq:queue"
    redis_settings = RedisSettings.from_dsn(os.environ["CHAOS_BACKEND_URL"])
    max_jobs = CFG.param("max_jobs")
    job_timeout = CFG.param("job_timeout_s")
    max_tries = CFG.param("max_tries")
    on_startup = started
    on_job_start = claimed
    after_job_end = completed
