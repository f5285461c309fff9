"""dramatiq_redis tasks: what the producer (control.py, in the suite) and Dramatiq's own worker (worker.py,
run by the `dramatiq` CLI) share, as a Dramatiq application's actors module is shared by both.

`broker_for` is Dramatiq's RedisBroker on the URL the suite hands over, its keys under the run's namespace
(RedisBroker's documented `namespace`: "The str with which to prefix all Redis keys"), with the
documented knobs the target's [params] set: `heartbeat_timeout` ("The amount of time (in ms) that has to
pass without a heartbeat for a broker process to be considered offline") and `maintenance_chance` ("How
many commands out of a million should trigger queue maintenance").

`define_actor` is the one actor, `chaos_job(job, payload)`, on queue `default`: the suite's job id is its
first argument (it travels in Dramatiq's own JSON message), the handler runs, and the job's external side
effect is the `effect` probe. Its `max_retries` is the contract's max_attempts less one, with the Retries
middleware's documented `min_backoff` / `max_backoff` (milliseconds) from [params], so a retry comes
back within a second instead of Dramatiq's default 15 s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

from chaos import probe
from chaos.worker import log, run_handler

ACTOR = "chaos_job"
QUEUE = "default"
SOCKET_TIMEOUT_S = 3.0  # a cut connection fails instead of hanging (redis-py's socket_timeout)

_current = threading.local()  # the token of the execution the worker thread runs (set by worker.py's middleware)


def namespace_of(prefix: str) -> str:
    """Dramatiq's namespace for the run's key prefix `chaos:<run>:`: RedisBroker names its keys
    `<namespace>:<queue>`, `<namespace>:__acks__.<broker id>.<queue>`, ... so `chaos:<run>` puts every one
    under the prefix. Without a prefix, Dramatiq's default namespace."""
    return prefix.rstrip(":") or "dramatiq"


def broker_for(url: str, prefix: str, params: dict[str, Any], kind: type[RedisBroker] = RedisBroker) -> RedisBroker:
    """RedisBroker (Dramatiq's default middleware: AgeLimit, TimeLimit, ShutdownNotifications, Callbacks,
    Pipelines, Retries) on its own redis-py client, with timeouts so a cut connection fails."""
    client = redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
    broker: RedisBroker = kind(
        namespace=namespace_of(prefix), heartbeat_timeout=int(params["heartbeat_timeout_ms"]),
        maintenance_chance=int(params["maintenance_chance"]), client=client)
    return broker


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


def define_actor(broker: RedisBroker, max_attempts: int, params: dict[str, Any]) -> Any:
    """Register chaos_job on `broker`: the producer sends it, the worker runs it."""

    def chaos_job(job: str, payload: dict[str, Any]) -> None:
        run_handler(payload)  # a poison job raises JobFailed here, before any effect
        token, attempt = getattr(_current, "token", None), getattr(_current, "attempt", 1)
        report(lambda: probe.effect(job, token or job, fence=attempt))

    declare = dramatiq.actor(actor_name=ACTOR, queue_name=QUEUE, broker=broker, max_retries=max_attempts - 1,
                             min_backoff=int(params["min_backoff_ms"]), max_backoff=int(params["max_backoff_ms"]))
    return declare(chaos_job)
