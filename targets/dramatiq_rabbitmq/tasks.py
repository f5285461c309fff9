"""dramatiq_rabbitmq tasks: what the producer (control.py, in the suite) and Dramatiq's own worker (worker.py,
run by the `dramatiq` CLI) share, as a Dramatiq application's actors module is shared by both. It mirrors
targets/dramatiq_redis/tasks.py (each target folder is self-contained) with RabbitmqBroker in place of
RedisBroker.

`broker_for` is Dramatiq's RabbitmqBroker on the AMQP URL the suite hands over (the run's vhost is in it),
with pika's documented `heartbeat` URL parameter when one is given (the worker's: [params] heartbeat_s),
and `confirm_delivery` ("Wait for RabbitMQ to confirm that messages have been committed on every call to
enqueue") for the producer.

`define_actor` is the one actor, `chaos_job(job, payload)`, on queue `default`: the suite's job id is its
first argument (it travels in Dramatiq's own JSON message), the handler runs, and the job's external side
effect is the `effect` probe. Its `max_retries` is the contract's max_attempts less one, with the Retries
middleware's documented `min_backoff` / `max_backoff` (milliseconds) from [params].
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from chaos import probe
from chaos.worker import log, run_handler

ACTOR = "chaos_job"
QUEUE = "default"
DELAYED = "default.DQ"  # Dramatiq's delay queue for `default` (a retry waits there for its eta)
DEAD = "default.XQ"     # Dramatiq's dead-letter queue for `default`

_current = threading.local()  # the token of the execution the worker thread runs (set by worker.py's middleware)


def with_heartbeat(url: str, heartbeat_s: int | None) -> str:
    """The URL with pika's `heartbeat` query parameter (seconds), which URLParameters reads."""
    if not heartbeat_s:
        return url
    return f"{url}{'&' if '?' in url else '?'}heartbeat={int(heartbeat_s)}"


def broker_for(url: str, heartbeat_s: int | None = None, confirm_delivery: bool = False,
               kind: type[RabbitmqBroker] = RabbitmqBroker) -> RabbitmqBroker:
    """RabbitmqBroker with Dramatiq's default middleware (AgeLimit, TimeLimit, ShutdownNotifications,
    Callbacks, Pipelines, Retries)."""
    return kind(url=with_heartbeat(url, heartbeat_s), confirm_delivery=confirm_delivery)


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once (Dramatiq catches what an actor
    or a middleware raises, and would log it and carry on as if it had been sent)."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


def set_current(token: str | None, attempt: int) -> None:
    _current.token, _current.attempt = token, attempt


def define_actor(broker: RabbitmqBroker, max_attempts: int, params: dict[str, Any]) -> Any:
    """Register chaos_job on `broker`: the producer sends it, the worker runs it."""

    def chaos_job(job: str, payload: dict[str, Any]) -> None:
        run_handler(payload)  # a poison job raises JobFailed here, before any effect
        token, attempt = getattr(_current, "token", None), getattr(_current, "attempt", 1)
        report(lambda: probe.effect(job, token or job, fence=attempt))

    declare = dramatiq.actor(actor_name=ACTOR, queue_name=QUEUE, broker=broker, max_retries=max_attempts - 1,
                             min_backoff=int(params["min_backoff_ms"]), max_backoff=int(params["max_backoff_ms"]))
    return declare(chaos_job)
