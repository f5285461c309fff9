"""dramatiq_rabbitmq worker: the module Dramatiq's own worker runs (target.toml's command is the `dramatiq`
CLI, `python -m dramatiq worker:broker --processes 1 --threads 1`). Nothing here takes, runs or completes a
job: Dramatiq's consumer thread receives deliveries on a channel of its own (basic.qos prefetch: its
worker's queue_prefetch), its worker thread runs the actor, and the consumer thread acks (basic.ack),
or nacks to the dead-letter queue `default.XQ`. This module builds the broker from CHAOS_BACKEND_URL
(with pika's `heartbeat`, [params] heartbeat_s) and adds one middleware, `Probes`, which reports what
Dramatiq does from its documented Middleware hooks. The `dramatiq` CLI forks the worker process that
imports this module, so every probe comes from that child of the process the suite started (its log's
first line names both pids); the suite's kill and stop reach the whole process tree.

- before_process_message ("Called before a message is processed"): `claim`. RabbitMQ delivered the
  message to this process's consumer channel, where it stays unacknowledged until the ack: the broker's
  own record of ownership. Token: Dramatiq's message id, this process's pid and a counter; attempt: the
  message's `retries` option plus one.
- the actor itself sends `effect` (tasks.py).
- after_process_message with an exception: `abandon` "handler failed" (this middleware is added last, and
  Dramatiq runs after-hooks in reverse order, so it runs before Retries re-enqueues or fails the message).
- after_skip_message: `abandon` "skipped".
- after_ack ("Called after a message has been acknowledged"): `ack`, with ok null by default
  ([params] ack_report = "unknown"): Dramatiq cannot say whether its ack took effect. Its RabbitMQ consumer
  hands basic.ack to its connection's thread (add_callback_threadsafe), AMQP has no reply to an ack, and
  Dramatiq emits after_ack even when the ack failed ("Failed to ack message: not in known tags", after its
  consumer reconnected: the delivery tag died with the old channel). So the final snapshot judges
  completions, from the broker's queues. `-p ack_report=after_ack` reports Dramatiq's word instead (ok
  true on every after_ack): README.md's finding shows what that word is worth.
- `ready`: the `default` queue consumer's first idle turn (ReadyConsumer.__next__ returns None): an inactivity
  tick of the consumer channel (pika's `consume(inactivity_timeout=...)` yields nothing: no delivery arrived
  within the consumer's idle timeout). Dramatiq's worker thread iterates its consumer and takes a None as
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
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.middleware import Middleware
from tasks import QUEUE, broker_for, define_actor, report, set_current

from chaos import probe
from chaos.worker import log, settings

CFG = settings()
PARAMS = json.loads(os.environ.get("CHAOS_TARGET_PARAMS") or "{}")
TRUSTED = True if PARAMS.get("ack_report") == "after_ack" else None  # the ack probe's ok: Dramatiq's word, or unknown



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


class ReadyBroker(RabbitmqBroker):
    """Dramatiq's broker, its consumers wrapped in ReadyConsumer."""

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> ReadyConsumer:
        return ReadyConsumer(super().consume(queue_name, prefetch, timeout), queue_name)


class Probes(Middleware):
    def __init__(self) -> None:
        self.counter = itertools.count(1)
        self.local = threading.local()

    def after_worker_boot(self, broker: Any, worker: Any) -> None:
        log(f"dramatiq worker process pid={os.getpid()} parent={os.getppid()}")

    def before_process_message(self, broker: Any, message: Any) -> None:
        job = str(message.args[0])
        attempt = int(message.options.get("retries", 0)) + 1
        token = f"{message.message_id}:{attempt}:{os.getpid()}.{next(self.counter)}"
        self.local.claim = (message.message_id, job, token)
        set_current(token, attempt)
        report(lambda: probe.claim(job, token, attempt=attempt))

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

    def after_ack(self, broker: Any, message: Any) -> None:
        mine = self._mine(message)
        if mine is not None:
            self.local.claim = None
            report(lambda: probe.ack(mine[0], mine[1], TRUSTED))


broker = broker_for(os.environ["CHAOS_BACKEND_URL"], int(PARAMS.get("heartbeat_s") or 0) or None, kind=ReadyBroker)
broker.add_middleware(Probes())
chaos_job = define_actor(broker, CFG.max_attempts, PARAMS)
