"""celery_rabbitmq worker: the module Celery's own worker loads (target.toml's command is
`python -m celery -A worker worker --pool solo ...`). Nothing here takes, runs or acknowledges a message:
Celery's worker does. This module builds the application (tasks.app_for, from CHAOS_BACKEND_URL and the
control's result directory) and reports what Celery does through its documented signals
(docs/userguide/signals.rst), which the solo pool sends from the worker process itself, and through the
task's documented request class (`Task.Request`, docs/userguide/tasks.rst, "Requests and custom requests"):

- task_prerun ("Dispatched before a task is executed"): `claim`. The worker holds the message: under
  acks=early Celery acknowledged it just before (the broker forgot it), under acks=late it is an
  unacknowledged delivery of the worker's channel.
- the task itself sends `effect`, and `abandon` before a retry (tasks.py).
- `ack`, once kombu has sent the acknowledgement of a task that succeeded (`Acked`): Celery hands the
  ack to its event loop (with the solo pool it runs after the task, acks=early or late), and kombu's
  `Message.ack_log_error` either writes basic.ack on the delivery's channel (the message's state is then
  ACK, `Message.acknowledged`) or logs "Couldn't ack <tag>, reason: ..." and carries on. The probe says
  what the broker's side shows (source "broker"): ok false where the ack failed (the channel's connection
  was gone: the broker requeues what that channel held, and a delivery tag belongs to its channel, so the
  broker never took it), null where it was written (AMQP confirms no ack: a frame written into a dead
  connection's socket is lost without an error), and the control then answers from the result backend,
  which proves the task ran, not the ack.
- `ready`: the event loop's second turn after Celery's `worker_ready` signal. Celery sends that signal from
  its event loop's set-up, once the consumer is subscribed (kombu's basic.consume, which waits for the
  broker's consume-ok) and before the loop runs; the loop's first turn drains what the broker had already
  pushed and polls the connection once, so at the second turn the worker is subscribed and polling, idle
  unless a delivery came (under `-s warmup=true` none can: nothing is enqueued yet). RabbitMQ pushes
  deliveries, so there is no empty fetch to wait for, and the worker runs no start-up recovery of its own
  (the broker requeues a dead consumer's deliveries).

An ack whose outcome kombu has not shown 2 s after its task (a connection lost with the ack still queued:
Celery's reconnect drops it, and nothing is logged) is reported as unknown (null), as is one that failed.

A probe the sink refuses ends the process at once (tasks.report).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from functools import partial
from typing import Any

from celery.signals import task_postrun, task_prerun, worker_ready
from celery.worker.request import Request
from kombu.asynchronous import get_event_loop
from tasks import TASK, app_for, attempt_of, define_task, new_token, report, token_of

from chaos import probe
from chaos.worker import settings

SETTINGS = settings()
ACK_OK = {"taken": None, "failed": False, "unknown": None}  # what the broker's side of an ack says of it, on AMQP
# How long after its task an ack may stay unsettled (kombu neither ran it nor logged its failure: a connection
# lost with the ack queued, whose callbacks Celery's reconnect drops) before it is reported as unknown.
UNSETTLED_AFTER_S = 2.0
FINISHED: dict[str, tuple[str, str, str]] = {}  # Celery's task id -> (job, token, state) of its execution that ran
PENDING: dict[str, Any] = {}  # Celery's task id -> the request whose ack was handed to the event loop
FAILED: set[Any] = set()  # the delivery tags kombu logged "Couldn't ack" for
LOCK = threading.Lock()  # settle runs on the event loop and on the unsettled-ack timer


class AckFailures(logging.Handler):
    """kombu's `Message.ack_log_error` logs a failed ack (to the logger Celery's request passes it) instead
    of raising: the record names the delivery tag."""

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Couldn't ack") and isinstance(record.args, tuple) and record.args:
            FAILED.add(record.args[0])


class Acked(Request):  # type: ignore[misc]
    """Celery's request, watching the ack it hands to the event loop until kombu has sent it."""

    def acknowledge(self) -> None:
        if self.acknowledged:
            return
        with LOCK:
            FAILED.discard(self.message.delivery_tag)  # a later channel reuses tags: only this ack's failure counts
        super().acknowledge()
        with LOCK:
            PENDING[str(self.id)] = self
        hub = get_event_loop()
        if hub is not None:
            hub.on_tick.add(settle)  # after the loop's callbacks, the ack among them; a set: added once
        settle()


def outcome(request: Any) -> str | None:
    """taken, failed, or None while the ack has not run yet (or no ack was handed to the loop)."""
    if request is None:
        return None
    if request.message.acknowledged:
        return "taken"
    return "failed" if request.message.delivery_tag in FAILED else None


def settle(late: str | None = None) -> None:
    """Report the ack of each finished task whose outcome is known, and of task `late` as unknown if it is
    not; a task that did not succeed sent its abandon from the task body, and reports no ack."""
    with LOCK:
        for task_id, (job, token, state) in list(FINISHED.items()):
            said = outcome(PENDING.get(task_id)) or ("unknown" if task_id == late else None)
            if said is None:
                continue
            del FINISHED[task_id]
            PENDING.pop(task_id, None)
            if state == "SUCCESS":
                report(partial(probe.ack, job, token, ACK_OK[said], source="broker"))


logging.getLogger("celery.worker.request").addHandler(AckFailures(logging.CRITICAL))
atexit.register(settle)  # an ack the event loop ran as it closed, at a warm shutdown
app = app_for(os.environ["CHAOS_BACKEND_URL"], os.environ["CHAOS_RESULT_DIR"], str(SETTINGS.param("acks")))
chaos_job = define_task(app, SETTINGS.max_attempts, Acked)


def ours(sender: Any) -> bool:
    return getattr(sender, "name", None) == TASK


@task_prerun.connect  # type: ignore[untyped-decorator]
def claimed(sender: Any = None, task_id: Any = None, task: Any = None, args: Any = None, **_: Any) -> None:
    if not ours(sender):
        return
    request = task.request
    token = new_token(request)
    report(lambda: probe.claim(str(args[0]), token, attempt=attempt_of(request),
                               library_id=str(request.hostname or "")))


@task_postrun.connect  # type: ignore[untyped-decorator]
def finished(sender: Any = None, task_id: Any = None, task: Any = None, args: Any = None, state: Any = None,
             **_: Any) -> None:
    if ours(sender):
        with LOCK:
            FINISHED[str(task_id)] = (str(args[0]), token_of(task.request), str(state))
        settle()
        timer = threading.Timer(UNSETTLED_AFTER_S, settle, (str(task_id),))
        timer.daemon = True
        timer.start()


@worker_ready.connect  # type: ignore[untyped-decorator]
def started(sender: Any = None, **_: Any) -> None:
    """Send `ready` at the event loop's second turn (its first drained and polled the connection once)."""
    hub = get_event_loop()
    if hub is None:
        return
    turns = [0]

    def turn() -> None:
        turns[0] += 1
        if turns[0] == 2:
            hub.on_tick.discard(turn)
            report(probe.ready)

    hub.on_tick.add(turn)
