"""rq_redis tasks: the module RQ's work horse imports (`tasks.chaos_job`, named by its dotted path when the
control enqueues), and the job callbacks RQ documents (`on_success`, `on_failure`: docs/docs/index.md, "Job
Callbacks"), which RQ runs in the work horse too. Nothing here takes, runs or completes a job: RQ's worker
dequeues it, registers it in the StartedJobRegistry, forks the horse, and records its end. This module only
reports what RQ does:

- `claim`: the job function's first line. Before the horse runs it, RQ's worker put the job in the queue's
  StartedJobRegistry (prepare_execution, in the worker process) and the horse set its status `started` with
  the worker's name (`prepare_job_execution`): the claim is committed in RQ's own record.
- `effect`: the job function, after the handler; the attempt is its fence.
- `ack`: the `on_success` callback, ok null. RQ runs it after the function returned and *before* it moves
  the job to the FinishedJobRegistry, so the callback cannot know whether the completion took effect; the
  control's `completion()` answers from the job's status in Redis (`finished`).
- `abandon` ("handler failed"): the `on_failure` callback, which the horse runs before RQ's
  handle_job_failure retries the job (Retry) or moves it to the FailedJobRegistry.

The work horse is a child of the supervised `rq worker` process (os.fork): it inherits the suite's
environment (CHAOS_WORKER_ID, the sink's address), so its probes name the supervised worker; `chaos.probe`
opens a connection of its own in a forked child. A SIGKILL of the worker's tree reaches the horse too.

RQ also calls `on_failure` from StartedJobRegistry.cleanup, in whichever worker's maintenance collected an
abandoned job (with AbandonedJobError). That call comes from another worker's process about an execution
that is not its own, so it sends nothing (the dead owner's execution ended with its process; the ledger
shows the kill).

A probe the sink refuses ends the horse at once (`os._exit`): RQ would otherwise log the callback's error
and mark the job failed as if the probe had been sent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from redis import Redis
from rq import Queue, get_current_job
from rq.exceptions import AbandonedJobError
from rq.job import Job
from rq.serializers import Serializer
from rq.timeouts import BaseDeathPenalty

from chaos import probe
from chaos.worker import log, run_handler, settings


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


class ReadyQueue(Queue):
    """The worker's queue class (`rq worker --queue-class tasks.ReadyQueue`): RQ's own dequeue, preceded by
    one non-blocking poll, so that an idle worker can say so before it blocks (an idle `default` worker
    blocks 405 s in one dequeue). The worker calls dequeue_any right after its maintenance (the first
    call of a process, after its start-up registry cleanup), so the first empty poll is the ready point."""

    @classmethod
    def dequeue_any(cls, queues: Iterable[Queue], timeout: int | None, connection: Redis,
                    job_class: type[Job] | None = None, serializer: Serializer | str | None = None,
                    death_penalty_class: type[BaseDeathPenalty] | None = None) -> tuple[Job, Queue] | None:
        """A non-blocking pop; empty, send `ready` (its first call only), then RQ's blocking pop."""
        queues = list(queues)
        found = super().dequeue_any(queues, None, connection, job_class, serializer, death_penalty_class)
        if found is not None or timeout is None:
            return found
        report(probe.ready)
        return super().dequeue_any(queues, timeout, connection, job_class, serializer, death_penalty_class)


def attempt_of(job: Any) -> int:
    """Which execution of its job this is, 1 for the first: RQ counts a job's retries down from Retry's
    `max` (max_attempts - 1), one less at each retry (`retries_left`); a job without Retry runs once."""
    left = job.retries_left
    return 1 if left is None else settings().max_attempts - int(left)


def token_of(job: Any) -> str:
    """The execution's token: RQ's job id (kept across retries) and the attempt."""
    return f"{job.id}:{attempt_of(job)}"


def chaos_job(job_id: str, payload: dict[str, Any]) -> str:
    """The job: the suite's job id is its first argument (in RQ's own job hash)."""
    job = get_current_job()
    assert job is not None, "chaos_job runs only inside RQ's work horse"
    token, attempt = token_of(job), attempt_of(job)
    report(lambda: probe.claim(job_id, token, attempt=attempt, library_id=str(job.worker_name)))
    run_handler(payload)  # a poison job raises JobFailed here, before any effect
    report(lambda: probe.effect(job_id, token, fence=attempt))
    return job_id


def on_success(job: Any, connection: Any, result: Any, *args: Any, **kwargs: Any) -> None:
    """RQ's success callback: the job returned; RQ completes it after this returns (ok null)."""
    report(lambda: probe.ack(str(job.args[0]), token_of(job), None))


def on_failure(job: Any, connection: Any, exc_type: Any, exc_value: Any, tb: Any) -> None:
    """RQ's failure callback: the job raised (or timed out), before RQ retries or fails it. Called from
    another worker's registry cleanup for an abandoned job (AbandonedJobError): not this process's
    execution, so nothing is sent (see the module's docstring)."""
    if isinstance(exc_type, type) and issubclass(exc_type, AbandonedJobError):
        log(f"RQ's cleanup collected abandoned job {job.id} ({job.args[0]}); not this process's execution")
        return
    report(lambda: probe.abandon(str(job.args[0]), token_of(job), reason="handler failed"))
