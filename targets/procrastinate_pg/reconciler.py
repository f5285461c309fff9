"""procrastinate_pg reconciler: procrastinate's documented "Retry stalled jobs" recipe
(docs/howto/production/retry_stalled_jobs.md) run from a process of its own instead of a periodic task,
which the docs allow ("Those stalled jobs can then be retried for example by a periodic task"):

    stalled_jobs = await app.job_manager.get_stalled_jobs()
    for job in stalled_jobs:
        await app.job_manager.retry_job(job)

every `reconcile_s`, with `seconds_since_heartbeat = stalled_after_s` (the docs: "make sure to also check
the update_heartbeat_interval and stalled_worker_timeout parameters of the worker", which worker.py sets
to match). Under `-p stalled_retry=off` (procrastinate's defaults: nothing retries a stalled job) it does
nothing until the run ends.
"""

from __future__ import annotations

import asyncio
import os

import procrastinate
from procrastinate.exceptions import ConnectorException

from chaos.worker import log, settings, stop_flag

CFG = settings()


async def reconcile(stop: object) -> None:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=os.environ["CHAOS_POSTGRES_DSN"], kwargs={"application_name": CFG.worker_id}))
    after_s = float(CFG.param("stalled_after_s"))
    every_s = float(CFG.param("reconcile_s"))
    async with app.open_async():
        while not stop.is_set():  # type: ignore[attr-defined]
            try:
                for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=after_s):
                    try:
                        await app.job_manager.retry_job(job)
                        log(f"retried stalled job {job.id} (worker {job.worker_id})")
                    except ConnectorException as exc:  # finished or retried meanwhile: procrastinate raises
                        log(f"could not retry job {job.id}: {exc}")
            except (ConnectorException, OSError) as exc:  # the server restarting, a cut link: look again next period
                log(f"stalled-job query failed: {exc}")
            await asyncio.sleep(every_s)


def main() -> None:
    stop = stop_flag()
    if CFG.param("stalled_retry") != "on":
        log("stalled_retry=off: procrastinate's defaults retry no stalled job; idle until the run ends")
        stop.wait()
        return
    asyncio.run(reconcile(stop))


if __name__ == "__main__":
    main()
