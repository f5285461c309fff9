"""procrastinate_pg worker: the module procrastinate's own worker loads (target.toml's command is
procrastinate's CLI, `python -m procrastinate --app=worker.app worker`). Nothing here fetches, runs,
retries or finishes a job: procrastinate's worker does. This module builds the App (its connector on the
DSN the suite hands this worker, with the worker's name as the session's application_name, so the
queue's own record names it) with its `worker_defaults` (the documented way to set worker options for
the CLI: "Values default to App.worker_defaults"), and reports what procrastinate does through one
documented extension point, a worker-wide sync task middleware (docs/howto/advanced/middleware.md), which
procrastinate runs in the thread that runs the task, around it:

- before `call_next()`: `claim`. procrastinate's worker has already fetched the job
  (procrastinate_fetch_job_v2 committed status 'doing' and its worker_id), so the claim is committed.
- the task itself sends `effect` (tasks.py).
- after `call_next()` returned: `ack`, with ok null: procrastinate, not this code, finishes the job
  (procrastinate_finish_job_v1) once the middleware returned, so whether the completion took effect is the
  control's to say (control.py's `completion`), and the queue's record (observer.py) says it too.
- `call_next()` raised: `abandon`, "handler failed", before procrastinate retries the job
  (procrastinate_retry_job_v2 puts it back to 'todo') or marks it failed.
- `ready`: the worker's first fetch that found no job (`JobManager.fetch_job` returned None). procrastinate's
  worker fetches only after its start-up maintenance (`prune_stalled_workers`, then `register_worker`) and
  after starting its side tasks (the LISTEN for new jobs, the heartbeat), so the worker is then idle and
  waiting. procrastinate has no fetch hook; the App's own JobManager has its fetch_job extended in place
  (the instance every task and the worker share).

The variant (`-p stalled_retry=...`) sets the heartbeat: procrastinate's defaults (a heartbeat every 10 s,
stalled workers pruned after 30 s) for `off`, and short documented knobs for `on`, which the reconciler
(reconciler.py, procrastinate's "Retry stalled jobs" recipe) pairs with.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import procrastinate
from tasks import attempt_of, define_task, report, suite_job, token_of

from chaos import probe
from chaos.worker import settings

CFG = settings()
STALLED_RETRY = CFG.param("stalled_retry") == "on"
HEARTBEAT_S = float(CFG.param("heartbeat_s"))
STALLED_AFTER_S = float(CFG.param("stalled_after_s"))


def middleware(call_next: Callable[[], Any], context: procrastinate.JobContext, worker: Any) -> Any:
    """A worker-wide sync task middleware: the probes around each execution of the suite's task."""
    job = context.job
    name = suite_job(job)
    if name is None:
        return call_next()
    token = token_of(job)
    report(lambda: probe.claim(name, token, attempt=attempt_of(job), library_id=str(worker.worker_id)))
    try:
        result = call_next()
    except BaseException:
        report(lambda: probe.abandon(name, token, reason="handler failed"))
        raise
    report(lambda: probe.ack(name, token, None))
    return result


def worker_options() -> dict[str, Any]:
    """procrastinate's worker options for the variant; the CLI's own flags (name, concurrency) win."""
    options: dict[str, Any] = {"task_middleware": [middleware], "queues": ["chaos"]}
    if STALLED_RETRY:
        options.update(update_heartbeat_interval=HEARTBEAT_S, stalled_worker_timeout=STALLED_AFTER_S,
                       fetch_job_polling_interval=HEARTBEAT_S / 2)
    return options


app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(
        conninfo=os.environ["CHAOS_POSTGRES_DSN"],
        kwargs={"application_name": CFG.worker_id},
    ),
    worker_defaults=worker_options(),  # type: ignore[arg-type]
)


def ready_after_empty_fetch(manager: Any) -> None:
    """Extend `manager.fetch_job` so that its first None (no job to take) sends `ready`."""
    fetch = manager.fetch_job

    async def fetch_then_ready(*args: Any, **kwargs: Any) -> Any:
        job = await fetch(*args, **kwargs)
        if job is None:
            manager.fetch_job = fetch  # the first empty fetch only
            report(probe.ready)  # once per process, and no gate holds it: the loop waits one short post
        return job

    manager.fetch_job = fetch_then_ready


ready_after_empty_fetch(app.job_manager)
chaos_job = define_task(app, CFG.max_attempts)
