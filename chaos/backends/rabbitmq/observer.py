"""The queue's own record on RabbitMQ: the broker's firehose (amq.rabbitmq.trace) copies every delivery of
the jobs queue (`deliver.<queue>`) and every publish (`publish.<exchange>`) into a queue of the observer's,
and the event exchange (amq.rabbitmq.event) its connection.created events, which carry each connection's
client-provided name: chaos.worker.rabbitmq names a worker's connection for its CHAOS_WORKER_ID.

What RabbitMQ 3.10 shows, found on Debian's 3.10.8: a delivery (to a consumer or a basic.get, with its
connection and the redelivered flag) and a publish (with its connection and the queues it was routed to).
It shows no ack, nack, reject or requeue, in the firehose or the event exchange, so which delivery was
acknowledged and which was requeued when its channel closed is not the broker's to tell: the observer
covers claims (deliveries) and failures (a publish routed to the dead-letter queue) and nothing else. Its
deliveries carry no time: `at` is when the observer received them.

Only on the suite's own node, which traces its vhost from boot and runs the event exchange
(chaos.backends.rabbitmq.local). A broker of yours could trace the run's own vhost (the management API's
tracing flag), but it names connections only broker-wide (the event exchange, one vhost for all) or in
the management API's statistics, seconds late and gone the moment a connection closes: too late for a
worker killed right after a delivery. There the observer covers nothing and the run judges from the
workers' probes alone.

The record's order is the observer's queue's: on one node the trace of a delivery enters it before the
trace of the redelivery that follows the first one's requeue. A trace the node had not yet delivered when
it crashed is lost with it (trace messages are transient); claims alone judge nothing, so such a gap can
only show as sources_disagree.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions

from chaos.backends.base import Backend
from chaos.contract import Contract
from chaos.queue_model import QueueRecord
from chaos.worker.rabbitmq import CONTROL, DEAD, QUEUE, TRANSIENT, parameters, parse

NAME = "chaos-observer"
CLOSE_WAIT_S = 5.0  # how long close() waits for a barrier publish under way
SINK = "chaos.observer"  # the observer's own queue, durable: what the node traces while it is away waits there
BARRIER = "x-chaos-observer-barrier"  # header of the observer's own marker, published straight to its queue
TRACE, EVENTS = "amq.rabbitmq.trace", "amq.rabbitmq.event"
RECONNECT_S = 0.2
IDLE_S = 0.1
BARRIER_S = 10.0
NAME_WAIT_S = 2.0  # how long a delivery waits for its connection's name before it is recorded without one
INSTALL_S = 20.0

BLIND = ("On a RabbitMQ broker of yours the observer could trace the run's own vhost, but not name the "
         "connections it sees: RabbitMQ publishes connection names only broker-wide (rabbitmq_event_exchange, in "
         "one vhost for all) or in the management API's statistics, seconds late and gone once a connection "
         "closes; it reads the queue's record on the suite's own node only, so this run judges from the workers' "
         "probes alone.")


@dataclass(frozen=True)
class Trace:
    """One ownership change as the firehose showed it: a delivery (claim) or a dead-lettering (fail)."""

    kind: str
    job: str
    connection: str
    at: float
    order: int


def trace_of(routing_key: str, headers: dict[str, Any], body: bytes, queue: str = QUEUE,
             dead: str = DEAD) -> tuple[str, str, str] | None:
    """A firehose message as (kind, job, connection): a delivery from `queue` is a claim, a publish routed
    to `dead` a failure; None for any other (an enqueue, a retry's republish, a delivery elsewhere)."""
    connection = _text(headers.get("connection"))
    if routing_key == f"deliver.{queue}":
        kind = "claim"
    elif routing_key.startswith("publish.") and dead in [_text(q) for q in headers.get("routed_queues") or []]:
        kind = "fail"
    else:
        return None
    try:
        job, _ = parse(body)
    except (ValueError, KeyError, TypeError):
        return None
    return (kind, job, connection) if isinstance(job, str) else None


def connection_named(headers: dict[str, Any]) -> tuple[str, str] | None:
    """A connection.created event as (connection, the client's name for it), None without a name."""
    name, provided = _text(headers.get("name")), _text(headers.get("user_provided_name"))
    return (name, provided) if name and provided else None


def _text(value: Any) -> str:
    """A header's text (pika gives a longstr as str, or as bytes where it is not UTF-8)."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else ""


class FirehoseObserver:
    """For a queue of chaos.worker.rabbitmq's layout (QUEUE and its dead-letter queue DEAD)."""

    covers = frozenset({"claim", "fail"})
    note = ""
    QUEUE = QUEUE
    DEAD = DEAD

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        if backend.provider not in ("local", "docker"):  # a node of the run's own, which it may trace
            self.covers, self.note = frozenset(), BLIND
        self.errors: list[str] = []
        self._lock = threading.Condition()
        self._traces: list[Trace] = []
        self._names: dict[str, str] = {}
        self._order = itertools.count(1)
        self._nonces = itertools.count(1)
        self._reached = 0
        self._consuming = False
        self._closed = threading.Event()
        self._barrier_lock = threading.Lock()
        self._barrier_connection: Any = None
        self._thread = threading.Thread(target=self._consume_forever, name="chaos-rabbitmq-firehose", daemon=True)

    def install(self) -> None:
        if not self.covers:
            return
        connection = pika.BlockingConnection(parameters(self.url, name=NAME))
        try:
            channel = connection.channel()
            channel.queue_declare(SINK, durable=True)
            channel.queue_bind(SINK, TRACE, f"deliver.{self.QUEUE}")
            channel.queue_bind(SINK, TRACE, "publish.")  # the default exchange's: a worker dead-letters through it
            channel.queue_bind(SINK, EVENTS, "connection.created")
        finally:
            connection.close()
        self._thread.start()
        with self._lock:
            if not self._lock.wait_for(lambda: self._consuming or self._closed.is_set(), INSTALL_S):
                raise TimeoutError(f"the RabbitMQ observer could not consume its trace queue within {INSTALL_S:g}s: "
                                   f"{'; '.join(self.errors[-3:]) or 'no answer'}")

    def read(self) -> list[QueueRecord]:
        if not self.covers:
            return []
        nonce = self._barrier()
        with self._lock:
            if not self._lock.wait_for(lambda: self._reached >= nonce, BARRIER_S):
                raise TimeoutError(f"the trace queue did not pass the observer's barrier within {BARRIER_S:g}s")
            self._lock.wait_for(self._named, NAME_WAIT_S)
            traces, self._traces = self._traces, []
            names = dict(self._names)
        return [QueueRecord(t.kind, t.job, names.get(t.connection), t.at, t.order) for t in traces
                if names.get(t.connection) != CONTROL]  # the control's snapshot peeks, and puts each back

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join(5)
        # A barrier publish still waiting for its confirm (the reading thread, left by a bounded join) holds
        # the lock: its connection then ends with the node, and the close never waits on it.
        if not self._barrier_lock.acquire(timeout=CLOSE_WAIT_S):
            return
        try:
            if self._barrier_connection is not None and self._barrier_connection.is_open:
                try:
                    self._barrier_connection.close()
                except TRANSIENT:
                    pass
        finally:
            self._barrier_lock.release()

    def _named(self) -> bool:
        """Every trace's connection named, or the oldest unnamed one waited NAME_WAIT_S for its name."""
        unnamed = [t.at for t in self._traces if t.connection not in self._names]
        return not unnamed or time.time() - min(unnamed) >= NAME_WAIT_S

    def _barrier(self) -> int:
        """Publish a marker straight to the observer's queue, confirmed: every trace made before is ahead of it."""
        nonce = next(self._nonces)
        with self._barrier_lock:
            try:
                if self._barrier_connection is None or not self._barrier_connection.is_open:
                    self._barrier_connection = pika.BlockingConnection(parameters(self.url, name=NAME))
                channel = self._barrier_connection.channel()
                channel.confirm_delivery()
                channel.basic_publish("", SINK, b"", pika.BasicProperties(headers={BARRIER: nonce}), mandatory=True)
                channel.close()
            except TRANSIENT:
                self._barrier_connection = None
                raise
        return nonce

    def _consume_forever(self) -> None:
        while not self._closed.is_set():
            try:
                self._consume()
            except TRANSIENT as exc:
                if not self._closed.is_set():
                    self.errors.append(repr(exc))
            self._closed.wait(RECONNECT_S)

    def _consume(self) -> None:
        connection = pika.BlockingConnection(parameters(self.url, name=NAME))
        try:
            channel = connection.channel()
            with self._lock:
                self._consuming = True
                self._lock.notify_all()
            for method, properties, body in channel.consume(SINK, auto_ack=True, inactivity_timeout=IDLE_S):
                if self._closed.is_set():
                    break
                if method is not None:
                    self._take(method.exchange, method.routing_key, properties.headers or {}, body)
        finally:
            if connection.is_open:
                try:
                    connection.close()
                except TRANSIENT:
                    pass

    def _take(self, exchange: str, routing_key: str, headers: dict[str, Any], body: bytes) -> None:
        at = time.time()
        with self._lock:
            if BARRIER in headers:
                self._reached = max(self._reached, int(headers[BARRIER]))
            elif exchange == EVENTS:
                named = connection_named(headers)
                if named is not None:
                    self._names[named[0]] = named[1]
            else:
                found = trace_of(routing_key, headers, body, self.QUEUE, self.DEAD)
                if found is not None:
                    kind, job, connection = found
                    self._traces.append(Trace(kind, job, connection, at, next(self._order)))
            self._lock.notify_all()

