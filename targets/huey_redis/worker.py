"""huey_redis worker: the module huey's own consumer runs (target.toml's command is huey's `huey_consumer`
entry point, `python -m huey.bin.huey_consumer worker.huey`, with one worker thread). Nothing here takes,
runs or completes a job: huey's consumer does. This module only builds the huey instance and reports what
huey does, through its documented signals (`@huey.signal(...)`), which huey sends synchronously from the
thread that runs the task:

- SIGNAL_EXECUTING ("task is about to be executed by a worker"): `claim`. huey's worker has already popped
  the message (a BRPOP on `huey.redis.<name>`), so the claim is committed; from here nothing in Redis
  remembers the job until its result is stored.
- the task itself sends `effect` (tasks.py).
- SIGNAL_COMPLETE (sent once the result is stored): `ack`, with ok null: huey, not this code, completed
  the task, so whether the completion took effect is the control's to say from huey's result store
  (control.py's `completion`).
- SIGNAL_ERROR ("task raised an unhandled exception"; sent before huey retries it or stores the error):
  `abandon`, "handler failed".
- SIGNAL_INTERRUPTED (the consumer shut down while the task ran): `abandon`, "interrupted"; huey does not
  run an interrupted task again.

- `ready`: the worker thread's first empty dequeue (a BRPOP that timed out after read_timeout), from
  ReadyHuey.dequeue: huey's Worker.loop calls `huey.dequeue()` after its start-up hooks, and nothing else
  of the consumer does (the scheduler reads the schedule, not the queue).

A probe the sink refuses ends the process at once (tasks.report).
"""

from __future__ import annotations

import os
from typing import Any

from huey import RedisHuey
from huey.signals import SIGNAL_COMPLETE, SIGNAL_ERROR, SIGNAL_EXECUTING, SIGNAL_INTERRUPTED
from tasks import attempt_of, define_task, huey_for, pool_for, report, token_of

from chaos import probe
from chaos.worker import settings


class ReadyHuey(RedisHuey):  # type: ignore[misc]
    """huey's RedisHuey whose dequeue sends `ready` once it comes back empty: the worker is idle."""

    def dequeue(self) -> Any:
        """huey's dequeue; None (nothing to take) sends `ready` (a process's first call only)."""
        task = super().dequeue()
        if task is None:
            report(probe.ready)
        return task


MAX_ATTEMPTS = settings().max_attempts
huey = huey_for(pool_for(os.environ["CHAOS_BACKEND_URL"]), os.environ.get("CHAOS_NAMESPACE", ""), ReadyHuey)
chaos_job = define_task(huey, MAX_ATTEMPTS)


def job_of(task: Any) -> str:
    """The suite's job id: chaos_job's first argument."""
    return str(task.args[0])


@huey.signal(SIGNAL_EXECUTING)  # type: ignore[untyped-decorator]
def claimed(signal: str, task: Any) -> None:
    report(lambda: probe.claim(job_of(task), token_of(task, MAX_ATTEMPTS), attempt=attempt_of(task, MAX_ATTEMPTS)))


@huey.signal(SIGNAL_COMPLETE)  # type: ignore[untyped-decorator]
def completed(signal: str, task: Any) -> None:
    report(lambda: probe.ack(job_of(task), token_of(task, MAX_ATTEMPTS), None))


@huey.signal(SIGNAL_ERROR)  # type: ignore[untyped-decorator]
def failed(signal: str, task: Any, exc: BaseException | None = None) -> None:
    report(lambda: probe.abandon(job_of(task), token_of(task, MAX_ATTEMPTS), reason="handler failed"))


@huey.signal(SIGNAL_INTERRUPTED)  # type: ignore[untyped-decorator]
def interrupted(signal: str, task: Any) -> None:
    report(lambda: probe.abandon(job_of(task), token_of(task, MAX_ATTEMPTS), reason="interrupted"))
