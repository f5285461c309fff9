"""Worker-side RabbitMQ plumbing shared by the RabbitMQ reference target (and its control): the queue
names, the message format, and connection parameters with AMQP heartbeats. Python 3.8 syntax, like the
rest of `chaos.worker`; needs the `pika` package."""

from __future__ import annotations

import json
import os
from typing import Any

import pika
import pika.exceptions

from chaos import events

QUEUE = "jobs"
DEAD = "jobs.dead"  # where a job goes after max_attempts failed attempts
ATTEMPTS = "x-chaos-attempts"  # header: failed attempts so far
CONTROL = "chaos-control"  # the control's connection name: its snapshot's basic.get is the suite's reading
# What a cut connection, a broker restart or a channel the broker closed raise.
TRANSIENT = (pika.exceptions.AMQPError, OSError)


def parameters(url: str = "", heartbeat_s: int | None = None, name: str = "") -> Any:
    """Connection parameters for `url` (by default this worker's own endpoint), with AMQP heartbeats. The
    connection is named (`name`, by default the worker's CHAOS_WORKER_ID): the broker's connection events
    carry the name, so an observer can say which worker a delivery went to."""
    params = pika.URLParameters(url or os.environ[events.ENV_BACKEND_URL])
    connection_name = name or os.environ.get(events.ENV_WORKER_ID, "")
    if connection_name:
        params.client_properties = {"connection_name": connection_name}
    params.connection_attempts = 1
    params.socket_timeout = 3
    params.blocked_connection_timeout = 10
    if heartbeat_s is not None:
        params.heartbeat = heartbeat_s
    return params


def declare(channel: Any) -> None:
    """Both queues durable: their persistent messages survive a broker restart."""
    channel.queue_declare(QUEUE, durable=True)
    channel.queue_declare(DEAD, durable=True)


def body(job: str, payload: dict[str, Any]) -> bytes:
    return json.dumps({"id": job, "payload": payload}, sort_keys=True).encode()


def parse(raw: bytes) -> tuple[str, dict[str, Any]]:
    data = json.loads(raw)
    return data["id"], data["payload"]


def persistent(attempts: int = 0) -> Any:
    return pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent, headers={ATTEMPTS: attempts})


__all__ = ["ATTEMPTS", "CONTROL", "DEAD", "QUEUE", "TRANSIENT", "body", "declare", "parameters", "parse", "persistent"]
