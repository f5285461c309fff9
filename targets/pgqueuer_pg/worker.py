"""pgqueuer_pg worker: the factory pgqueuer's own CLI runs (target.toml: `python -m pgqueuer run
worker:create_pgqueuer ...`, pgqueuer's `pgq run`). Nothing here dequeues, heartbeats, retries or completes
a job: pgqueuer's QueueManager does. This module builds the PgQueuer instance the documented way (an
async context manager yielding `PgQueuer.from_psycopg_connection(...)`, docs/getting-started/quickstart.md)
and registers one entrypoint, `chaos_job`, whose body reports what it sees:

- `claim`, first thing in the entrypoint: pgqueuer's dequeue has committed the row as `picked` with this
  worker's queue_manager_id before it dispatches the job, so the claim is the queue's.
- `effect`, after the handler: the side effect.
- `ack` with ok null, last thing in the entrypoint: pgqueuer completes the job itself once the entrypoint
  returned (a buffered DELETE of the row, `successful` in pgqueuer_log), out of this code's sight; the
  control's `completion` answers from pgqueuer_log.
- `abandon` ("handler failed") when the handler raised, before the exception reaches pgqueuer's
  DatabaseRetryEntrypointExecutor, which re-queues the job (RetryRequested) or, after its last attempt, holds
  it as `failed` (on_failure="hold").
- `abandon` ("canceled") when pgqueuer cancels the running entrypoint (its manager stopping after a failure).
- no `heartbeat`: pgqueuer writes heartbeats from its own buffer and exposes no hook for them
  (README.md, "Not covered").
- `ready`: the manager's first dequeue that found nothing (`queries.dequeue` returned no job). pgqueuer's
  QueueManager.run verifies the schema and starts its LISTEN for new jobs before its first dequeue, and that
  dequeue query itself is where it retakes a stale `picked` job (heartbeat older than heartbeat_timeout), so
  an empty first dequeue is a worker past its start-up, idle and waiting for a notice. pgqueuer has no
  dequeue hook; the PgQueuer's own queries object has its dequeue extended in place.

Blocking calls (the probes, the handler) run in a thread (`asyncio.to_thread`, as pgqueuer's docs say for
blocking code), so a probe a gate holds blocks only this job, never pgqueuer's event loop and its heartbeats.
A probe the sink refuses ends the process at once (pgqueuer would log an exception and carry on).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pgqueuer
import psycopg
from pgqueuer import DatabaseRetryEntrypointExecutor, Job, PgQueuer

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, settings

ENTRYPOINT = "chaos_job"


def token_of(job: Job) -> str:
    """The execution's token: pgqueuer's job id, the picking worker's queue_manager_id and the row's attempts
    (the observer's trigger builds the same from the row)."""
    return f"{job.id}:{job.queue_manager_id}:{job.attempts}"


async def report(send: Callable[[], Any]) -> Any:
    """Send one probe from a thread; one the sink did not commit ends the process."""
    try:
        return await asyncio.to_thread(send)
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


def ready_after_empty_dequeue(queries: Any) -> None:
    """Extend `queries.dequeue` so that its first empty answer sends `ready`."""
    dequeue = queries.dequeue

    async def dequeue_then_ready(*args: Any, **kwargs: Any) -> Any:
        jobs = await dequeue(*args, **kwargs)
        if not jobs:
            queries.dequeue = dequeue  # the first empty dequeue only
            await report(probe.ready)
        return jobs

    queries.dequeue = dequeue_then_ready


@asynccontextmanager
async def create_pgqueuer() -> AsyncIterator[PgQueuer]:
    cfg = settings()
    dsn = os.environ["CHAOS_POSTGRES_DSN"]
    # application_name: the observer's record names the worker by it.
    connection = await psycopg.AsyncConnection.connect(dsn, autocommit=True, application_name=cfg.worker_id,
                                                       connect_timeout=5)
    pgq = PgQueuer.from_psycopg_connection(connection)
    retries = max(cfg.max_attempts - 1, 0)

    @pgq.entrypoint(
        ENTRYPOINT,
        on_failure="hold",
        executor_factory=lambda params: DatabaseRetryEntrypointExecutor(
            parameters=params, max_attempts=retries,
            initial_delay=timedelta(seconds=float(cfg.param("retry_delay_s")))),
    )
    async def chaos_job(job: Job) -> None:
        body = json.loads(job.payload or b"{}")
        name, payload, token = str(body["job"]), dict(body["payload"]), token_of(job)
        await report(lambda: probe.claim(name, token))
        try:
            await asyncio.to_thread(run_handler, payload)
        except JobFailed:
            await report(lambda: probe.abandon(name, token, reason="handler failed"))
            raise
        except asyncio.CancelledError:
            # pgqueuer cancels a running job when its manager stops on a failure (a broken connection) and
            # then logs it "canceled" (deleting its row, if it still can): the job is given up here.
            await report(lambda: probe.abandon(name, token, reason="canceled"))
            raise
        await report(lambda: probe.effect(name, token))
        await report(lambda: probe.ack(name, token, None))

    ready_after_empty_dequeue(pgq.qm.queries)
    try:
        yield pgq
    finally:
        await connection.close()


def main() -> None:
    """Run pgqueuer's own worker loop on the factory (docs/guides/deployment.md: `pgqueuer.run` "takes the
    factory ... and the same options as `pgq run`"); it handles SIGINT and SIGTERM as `pgq run` does."""
    cfg = settings()
    asyncio.run(pgqueuer.run(
        create_pgqueuer,
        heartbeat_timeout=timedelta(seconds=float(cfg.param("heartbeat_timeout_s"))),
        dequeue_timeout=timedelta(seconds=float(cfg.param("dequeue_timeout_s"))),
        batch_size=int(cfg.param("batch_size")),
        max_concurrent_tasks=int(cfg.param("max_concurrent_tasks")),
        restart_on_failure=bool(cfg.param("restart_on_failure")),
        restart_delay=timedelta(seconds=float(cfg.param("restart_delay_s"))),
    ))


if __name__ == "__main__":
    main()
