"""rabbitmq_ack worker: a consumer with manual acknowledgement after the effect, prefetch 1, and AMQP
heartbeats (the seed: "RabbitMQ binds manual delivery acknowledgements to a channel. If the channel or
connection closes before acknowledgement, the broker automatically requeues the delivery").

pika's connection is not thread-safe and sends heartbeats only while its I/O loop runs, so the handler
runs on its own thread while this one keeps the connection's I/O going. When the channel or connection
closes under it (the broker's heartbeat timeout, a consumer_timeout, a cut), the delivery is requeued
and the handler is stopped. The ack is judged by what the connection knows: already closed, or the
channel closed by the broker for it, is a rejected ack; a connection lost after sending it is unknown.
A failing handler republishes the job with its attempt count, or dead-letters it after max_attempts.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pika
import pika.exceptions

from chaos import probe
from chaos.worker import HandlerThread, JobFailed, WorkerSettings, log, settings, stop_flag
from chaos.worker.rabbitmq import ATTEMPTS, DEAD, QUEUE, TRANSIENT, declare, parameters, parse, persistent

IO_SLICE_S = 0.05
IDLE_S = 0.2


def acknowledge(connection: Any, channel: Any, tag: int) -> bool | None:
    """True once the broker took the ack; False when it cannot have (the channel was already closed, so the
    delivery was requeued, or the broker closed the channel for this ack); None when the connection died
    after the ack left."""
    try:
        connection.process_data_events(0)  # learn of a close that happened while this worker was away
        channel.basic_ack(tag)
    except TRANSIENT as exc:
        log(f"ack of delivery {tag} refused: the channel is closed ({exc!r})")
        return False
    try:
        channel.basic_qos(prefetch_count=1)  # a round trip: the broker has processed the ack before it
    except pika.exceptions.ChannelClosedByBroker as exc:
        log(f"the broker closed the channel for the ack of delivery {tag}: {exc!r}")
        return False
    except TRANSIENT as exc:
        log(f"the connection failed with the ack of delivery {tag} in flight ({exc!r})")
        return None
    return True


def work(connection: Any, channel: Any, cfg: WorkerSettings, session: str,
         method: Any, properties: Any, raw: bytes) -> None:
    job, payload = parse(raw)
    attempts = int((properties.headers or {}).get(ATTEMPTS, 0))
    token = f"{session}:{method.delivery_tag}"  # a delivery: this connection's session and its delivery tag
    probe.claim(job, token, attempt=attempts + 1)
    lost = threading.Event()
    handler = HandlerThread(payload, lost)
    try:
        while handler.running():
            connection.sleep(IO_SLICE_S)  # the I/O loop: heartbeats go out, a close comes in
            if channel.is_closed:
                raise pika.exceptions.ChannelClosed(0, "closed by the broker")
    except TRANSIENT as exc:
        lost.set()  # the delivery is requeued: stop working on it
        log(f"{job}: the channel closed under the handler ({exc!r}); its delivery is requeued")
        probe.abandon(job, token)
        raise
    if isinstance(handler.outcome, JobFailed):
        probe.abandon(job, token, reason="handler failed")
        failed = attempts + 1
        queue = DEAD if failed >= cfg.max_attempts else QUEUE
        channel.basic_publish("", queue, raw, persistent(failed), mandatory=True)  # confirmed before the ack
        channel.basic_ack(method.delivery_tag)
        log(f"{job} failed ({handler.outcome}); republished to {queue} after {failed} attempt(s)")
        return
    probe.effect(job, token)
    probe.ack(job, token, acknowledge(connection, channel, method.delivery_tag))


def consume(cfg: WorkerSettings, stop: threading.Event) -> None:
    connection = pika.BlockingConnection(parameters(heartbeat_s=cfg.param("heartbeat_s")))
    try:
        channel = connection.channel()
        declare(channel)  # a broker that crashed soon after the control declared the queues may have lost them
        channel.basic_qos(prefetch_count=1)
        channel.confirm_delivery()
        session = uuid.uuid4().hex[:8]
        for method, properties, raw in channel.consume(QUEUE, inactivity_timeout=IDLE_S):
            if stop.is_set():
                break
            if method is None:
                probe.ready()
            else:
                work(connection, channel, cfg, session, method, properties, raw)
    finally:
        if connection.is_open:
            try:
                connection.close()
            except TRANSIENT:
                pass


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    log(f"started with {cfg.params}")
    while not stop.is_set():
        try:
            consume(cfg, stop)
        except TRANSIENT as exc:
            log(f"connection lost: {exc!r}")
            stop.wait(0.2)
    log("stopping")


if __name__ == "__main__":
    main()
