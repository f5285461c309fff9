"""dramatiq_redis worker: the module Dramatiq's own worker runs (target.toml's command is the `dramatiq` CLI,
`python -m dramatiq worker:broker --processes 1 --threads 1`). Nothing here takes, runs or completes a job:
Dramatiq's worker fetches (its dispatch script moves a message id from the queue list into this broker
process's `__acks__` set), runs the actor, retries, acks and dead-letters. This module builds the broker
from CHAOS_BACKEND_URL / CHAOS_NAMESPACE and adds one middleware, `Probes`, which reports what Dramatiq
does from its documented Middleware hooks. The `dramatiq` CLI forks the worker process that imports this
module, so every probe comes from that child of the process the suite started (its log's first line
names both pids); the suite's kill and stop reach the whole process tree.

- before_process_message ("Called before a message is processed"): `claim`. The message was fetched
  already: its id is in this process's `__acks__.<broker id>.default` set, the queue's own record of
  who holds it. Token: Dramatiq's per-enqueue `redis_message_id`, this process's pid and a counter;
  attempt: the message's `retries` option plus one.
- the actor itself sends `effect` (tasks.py).
- after_process_message with an exception: `abandon` "handler failed" (this middleware is added last, and
  Dramatiq runs after-hooks in reverse order, so it runs before Retries re-enqueues or fails the message).
- after_skip_message: `abandon` "skipped".
- before_ack / after_ack: `ack`. Dramatiq's Redis ack removes the id from this process's `__acks__` set
  and, only if it was there, deletes the message; a process whose messages were requeued (its heartbeat
  older than heartbeat_timeout) acks nothing, silently. So before_ack reads the set (SISMEMBER, the
  documented key layout of dispatch.lua) and the ack's `ok` is whether the id was still this process's.
- `ready`: the `default` queue consumer's first idle turn (ReadyConsumer.__next__ returns None): a fetch (its
  dispatch script, which also runs the broker's maintenance, the requeue of dead workers' messages, at
  maintenance_chance) that came back empty. Dramatiq's worker thread iterates its consumer and takes a None as
  idle; no middleware hook says so, so the broker (ReadyBroker) wraps each consumer its public `consume`
  returns in one that watches for it.

A probe the sink refuses ends the process at once (tasks.report).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from typing import Any

from dramatiq.broker import Consumer
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware
from tasks import QUEUE, broker_for, define_actor, namespace_of, report, set_current

from chaos import probe
from chaos.worker import log, settings

CFG = settings()
PARAMS = json.loads(os.environ.get("CHAOS_TARGET_PARAMS") or "{}")
URL, PREFIX = os.environ["CHAOS_BACKEND_URL"], os.environ.get("CHAOS_NAMESPACE", "")



class ReadyConsumer(Consumer):
    """The broker's own consumer (`inner`), sending `ready` at its first idle turn on the run's queue. It
    wraps what Dramatiq's public `Broker.consume` returned, passing every call on."""

    def __init__(self, inner: Consumer, queue_name: str) -> None:
        self.inner, self.queue_name = inner, queue_name

    def __next__(self) -> Any:
        """Dramatiq's next message; None (idle) sends `ready` (a process's first call only)."""
        message = next(self.inner)
        if message is None and self.queue_name == QUEUE:  # not the delay queue's consumer
            report(probe.ready)
        return message

    def ack(self, message: Any) -> None:
        self.inner.ack(message)

    def nack(self, message: Any) -> None:
        self.inner.nack(message)

    def requeue(self, messages: Any) -> None:
        self.inner.requeue(messages)

    def close(self) -> None:
        self.inner.close()


class ReadyBroker(RedisBroker):
    """Dramatiq's broker, its consumers wrapped in ReadyConsumer."""

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> ReadyConsumer:
        return ReadyConsumer(super().consume(queue_name, prefetch, timeout), queue_name)


class Probes(Middleware):
    def __init__(self) -> None:
        self.counter = itertools.count(1)
        self.local = threading.local()
        self.held: dict[str, bool] = {}  # redis_message_id -> still in this process's acks set before its ack

    def after_worker_boot(self, broker: Any, worker: Any) -> None:
        log(f"dramatiq worker process pid={os.getpid()} parent={os.getppid()} broker_id={broker.broker_id}")

    def before_process_message(self, broker: Any, message: Any) -> None:
        job = str(message.args[0])
        attempt = int(message.options.get("retries", 0)) + 1
        token = f"{message.options['redis_message_id']}:{os.getpid()}.{next(self.counter)}"
        self.local.claim = (message.message_id, job, token)
        set_current(token, attempt)
        report(lambda: probe.claim(job, token, attempt=attempt, library_id=broker.broker_id))

    def _mine(self, message: Any) -> tuple[str, str] | None:
        claim = getattr(self.local, "claim", None)
        if claim is None or claim[0] != message.message_id:
            return None  # a delayed retry's hand-over (no actor ran here), not an execution of ours
        return claim[1], claim[2]

    def after_process_message(self, broker: Any, message: Any, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        mine = self._mine(message)
        if mine is not None and exception is not None:
            self.local.claim = None
            job, token = mine
            report(lambda: probe.abandon(job, token, reason="handler failed"))

    def after_skip_message(self, broker: Any, message: Any) -> None:
        mine = self._mine(message)
        if mine is not None:
            self.local.claim = None
            report(lambda: probe.abandon(mine[0], mine[1], reason="skipped"))

    def before_ack(self, broker: Any, message: Any) -> None:
        if self._mine(message) is not None:
            key = f"{namespace_of(PREFIX)}:__acks__.{broker.broker_id}.{QUEUE}"
            self.local.held = bool(broker.client.sismember(key, message.options["redis_message_id"]))

    def after_ack(self, broker: Any, message: Any) -> None:
        mine = self._mine(message)
        if mine is not None:
            self.local.claim = None
            held = getattr(self.local, "held", None)
            report(lambda: probe.ack(mine[0], mine[1], held))


broker = broker_for(URL, PREFIX, PARAMS, ReadyBroker)
broker.add_middleware(Probes())
chaos_job = define_actor(broker, CFG.max_attempts, PARAMS)
