"""celery_redis worker: the module Celery's own worker loads (target.toml's command is
`python -m celery -A worker worker --pool solo ...`). Nothing here takes, runs or acknowledges a message:
Celery's worker does. This module builds the application (tasks.app_for, from CHAOS_BACKEND_URL and
CHAOS_NAMESPACE) and reports what Celery does through its documented signals
(docs/userguide/signals.rst), which the solo pool sends from the worker process itself, and through the
task's documented request class (`Task.Request`, docs/userguide/tasks.rst, "Requests and custom requests"):

- task_prerun ("Dispatched before a task is executed"): `claim`. The worker holds the message: kombu moved it from the
  queue list to its `unacked` hash when it delivered it; under acks=early Celery acknowledged it just
  before (deleted it from `unacked`), under acks=late it stays there until the task returned.
- the task itself sends `effect`, and `abandon` before a retry (tasks.py).
- `ack`, once kombu has sent the acknowledgement of a task that succeeded (`Acked`): Celery hands the
  ack to its event loop (with the solo pool it runs after the task, acks=early or late), and kombu's
  `Message.ack_log_error` either deletes the delivery from the `unacked` hash (the message's state is
  then ACK, `Message.acknowledged`) or logs "Couldn't ack <tag>, reason: ..." and carries on. The probe
  says what the broker answered (source "broker"): ok true where Redis ran the HDEL (which refuses
  nothing: a redelivered message keeps its delivery tag, so a stale owner's ack deletes the new owner's
  entry), null where the ack failed (the connection broke with the HDEL in flight: it may have run), and
  the control then answers from the result backend, which proves the task ran, not the ack.
- `ready`: the first turn of Celery's event loop, after its `worker_ready` signal, once kombu's
  `restore_visible` sweep of the `unacked` hash (the recovery of a dead worker's messages, every
  `unacked_restore_interval`, here 1 s; the loop's timer runs it just before the turn's tick callbacks) has
  run in this process. Celery sends `worker_ready` once the consumer is set up and before its loop runs;
  by the first sweep the loop has issued its BRPOP and polled, and the worker is idle (under `-s
  warmup=true` nothing is enqueued yet). Neither Celery nor kombu signals an empty BRPOP (only private
  kombu methods see one), so the point is the first sweep: the worker's broker connection uses
  ReadyTransport (through Celery's `broker_transport` setting, which takes a transport class), whose QoS
  notes that `restore_visible` ran.

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
from kombu.transport import redis as kombu_redis
from tasks import TASK, app_for, attempt_of, define_task, new_token, report, token_of

from chaos import probe
from chaos.worker import settings

SETTINGS = settings()
ACK_OK = {"taken": True, "failed": None, "unknown": None}  # what the broker's answer to an ack says of it, on Redis
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
            FAILED.discard(self.message.delivery_tag)  # a redelivery keeps its tag: only this ack's failure counts
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


class SweptQoS(kombu_redis.QoS):
    """kombu's Redis QoS, noting that its restore sweep ran (or found another worker's sweep under way)."""

    swept = False

    def restore_visible(self, *args: Any, **kwargs: Any) -> None:
        super().restore_visible(*args, **kwargs)  # type: ignore[no-untyped-call]
        SweptQoS.swept = True


class ReadyChannel(kombu_redis.Channel):
    """kombu's Redis channel with SweptQoS."""

    QoS = SweptQoS


class ReadyTransport(kombu_redis.Transport):
    """kombu's Redis transport with ReadyChannel, for this worker's broker connection only."""

    Channel = ReadyChannel


logging.getLogger("celery.worker.request").addHandler(AckFailures(logging.CRITICAL))
atexit.register(settle)  # an ack the event loop ran as it closed, at a warm shutdown
app = app_for(os.environ["CHAOS_BACKEND_URL"], os.environ["CHAOS_NAMESPACE"], str(SETTINGS.param("acks")))
app.conf.broker_transport = ReadyTransport
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
    """Send `ready` at the first event-loop turn after kombu's first restore sweep (the loop's timer runs
    the sweep just before the turn's tick callbacks)."""
    hub = get_event_loop()
    if hub is None:
        return

    def turn() -> None:
        if SweptQoS.swept:
            hub.on_tick.discard(turn)
            report(probe.ready)

    hub.on_tick.add(turn)
