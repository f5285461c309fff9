"""celery_rabbitmq tasks: what the producer (control.py, in the suite) and Celery's own worker (worker.py,
loaded by `celery -A worker worker`) share, as a Celery application's tasks module is shared by both.

`app_for` builds the Celery application: the broker is the run's RabbitMQ (kombu's py-amqp transport), the
result backend Celery's file-system backend in a directory the control makes for the run (a result
backend the control can read without a second server), and the settings the target's `acks` parameter
chooses:

- `acks = "early"` (Celery's default): "the task messages will be acknowledged right before the task is
  executed" (docs/userguide/configuration.rst, task_acks_late);
- `acks = "late"`: `task_acks_late = True` and `task_reject_on_worker_lost = True`, the at-least-once
  configuration Celery's FAQ and task guide describe (README.md quotes them).

`worker_prefetch_multiplier = 1`: the worker reserves one message at a time (with the solo pool, the one
it runs), so a killed worker holds no prefetched message besides the one it runs.

`define_task` registers the one task, `chaos_job(job, payload)`: the suite's job id is its first argument,
in Celery's own message; the handler runs, then the `effect` probe. A poison job's handler raises
JobFailed: the task sends `abandon` and then asks Celery for a retry (`self.retry`, which publishes the
retry before it raises), until `max_retries` (max_attempts - 1) is spent and Celery stores the failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

from celery import Celery

from chaos import probe
from chaos.worker import JobFailed, log, run_handler

TASK = "chaos_job"
QUEUE = "celery"  # Celery's default queue (task_default_queue), on its default direct exchange `celery`
HEARTBEAT_S = 2  # broker_heartbeat (Celery's default 120 s): README.md says why
TOKENS: dict[str, str] = {}  # Celery's task id -> the token of its execution in this process (solo pool: one)


def app_for(broker_url: str, result_dir: str, acks: str) -> Celery:
    app = Celery("chaos", broker=broker_url, backend=f"file://{result_dir}", set_as_current=False)
    late = acks == "late"
    app.conf.update(
        task_acks_late=late,
        task_reject_on_worker_lost=late,
        worker_prefetch_multiplier=1,
        broker_heartbeat=HEARTBEAT_S,
        broker_connection_retry_on_startup=True,
        task_default_queue=QUEUE,
        worker_hijack_root_logger=False,
    )
    return app


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once (Celery logs and swallows what
    a signal receiver raises, and would carry on as if it had been sent)."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


def attempt_of(request: Any) -> int:
    """Celery's count of the task's executions it knows of: its retries so far, plus one. A redelivered
    message carries the same count (the broker, not Celery, redelivered it)."""
    return int(request.retries or 0) + 1


def new_token(request: Any) -> str:
    """A token for one execution: Celery's task id (kept across retries), the attempt, and a random part, so
    that a redelivery of the same message to the same worker name is an execution of its own."""
    token = f"{request.id}:{attempt_of(request)}:{uuid.uuid4().hex[:8]}"
    TOKENS[str(request.id)] = token
    return token


def token_of(request: Any) -> str:
    return TOKENS.get(str(request.id)) or f"{request.id}:{attempt_of(request)}:?"


def define_task(app: Celery, max_attempts: int, request: type | None = None) -> Any:
    """The one task; `request`: the worker's request class (Task.Request), where it watches the ack."""
    options = {"Request": request} if request is not None else {}

    @app.task(bind=True, name=TASK, max_retries=max_attempts - 1, **options)  # type: ignore[untyped-decorator]
    def chaos_job(self: Any, job: str, payload: dict[str, Any]) -> str:
        token = token_of(self.request)
        try:
            run_handler(payload)  # a poison job raises JobFailed here, before any effect
        except JobFailed as exc:
            # Before Celery can hand the job out again: self.retry publishes the retry's message.
            report(lambda: probe.abandon(job, token, reason="handler failed"))
            if self.request.retries >= self.max_retries:
                raise  # no retry left: Celery stores the failure (FAILURE)
            raise self.retry(exc=exc, countdown=0) from exc
        report(lambda: probe.effect(job, token, fence=attempt_of(self.request)))
        return job

    return chaos_job
