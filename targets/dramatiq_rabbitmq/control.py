"""dramatiq_rabbitmq control side: the producer and the snapshot, through Dramatiq's own API and the queues
RabbitmqBroker declares.

It loads the target's tasks.py (not into sys.modules: the suite's process may load other targets),
declares Dramatiq's queues through the broker (`declare_queue("default", ensure=True)`: `default` with its
dead-letter arguments, `default.DQ`, `default.XQ`), and enqueues by sending the actor,
`chaos_job.send(job.id, payload)`, on a broker with `confirm_delivery` (each send returns once RabbitMQ
has the message).

Completions: Dramatiq cannot say whether its ack took effect (worker.py), so the worker's ack probe says
ok null and `completion(job, token)` answers from the broker, once the answer is certain. When no
consumer is left on Dramatiq's queues (passive queue.declare: consumer_count 0 on `default` and
`default.DQ`, so no delivery is unacknowledged anywhere: RabbitMQ requeues a closed channel's) and the
job's message is in none of the three queues, an ack removed it (under manual acks nothing else takes a
delivered message out of a queue but a reject, which dead-letters it to `default.XQ`): the job is
completed. Whose ack it was the broker does not record: "accepted" when this token is the only one the
suite has asked about for the job (every execution that calls ack reports it), else "done" (the job
completed, by this execution's ack or another's: a stale owner's ack on a channel the broker closed is
never sent, and which of two the broker took cannot be told). Otherwise "unknown", and the final snapshot
judges. While workers run it is always "unknown", so a run waits out its scenario's drain timeout; the
run's last question comes after every worker stopped.

A broker does not report a message's state, and an acknowledged message is gone: the snapshot fetches
every message of Dramatiq's three queues without acknowledging them (basic.get), and puts them back by
closing its channel. A job in `default` or `default.DQ` is pending, in `default.XQ` dead, and in none
absent (acknowledged, out for delivery, or lost): hence `shows_deliveries = False`, and a job counts as
drained once it is dead or an ack of it was accepted. The final snapshot runs after every worker
stopped, when every unacknowledged delivery has been requeued.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pika
import pika.exceptions

from chaos import Backend, Contract, Endpoint, Job, JobState, load_module

NOT_FOUND = 404  # AMQP's reply code for a queue the broker does not have


def load_tasks() -> ModuleType:
    return load_module(Path(__file__).with_name("tasks.py"), "dramatiq_rabbitmq_tasks", "dramatiq_rabbitmq tasks.py")


class Control:
    shows_deliveries: ClassVar[bool] = False  # an unacknowledged delivery is in no queue

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.tasks = load_tasks()
        self.url = backend.endpoint.url
        self.params = params
        self.max_attempts = contract.max_attempts or 1
        self.local = threading.local()  # pika's connections are not thread-safe: one per thread
        self.connections: list[Any] = []
        self.lock = threading.Lock()
        self._broker: Any = None
        self._actor: Any = None
        self.asked: dict[str, set[str]] = {}  # job -> every token completion() was asked about

    def producer(self) -> Any:
        """The producer's actor, on a broker made on first use (its per-thread connection opens lazily)."""
        if self._actor is None:
            self._broker = self.tasks.broker_for(self.url, confirm_delivery=True)
            self._actor = self.tasks.define_actor(self._broker, self.max_attempts, self.params)
        return self._actor

    def setup(self) -> None:
        self.producer()
        self._broker.declare_queue(self.tasks.QUEUE, ensure=True)

    def enqueue(self, jobs: list[Job]) -> None:
        actor = self.producer()
        for job in jobs:
            actor.send(job.id, job.payload())

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"CHAOS_BACKEND_URL": endpoint.url}

    def channel(self) -> Any:
        """A fresh channel on this thread's connection, reopened after the broker restarted under it."""
        connection = getattr(self.local, "connection", None)
        if connection is None or connection.is_closed:
            connection = pika.BlockingConnection(pika.URLParameters(self.url))
            self.local.connection = connection
            with self.lock:
                self.connections.append(connection)
        return connection.channel()

    def snapshot(self) -> list[JobState]:
        """A queue the broker no longer has holds none of the jobs: they show absent."""
        states: dict[str, JobState] = {}
        for queue, state in ((self.tasks.DEAD, "dead"), (self.tasks.DELAYED, "pending"), (self.tasks.QUEUE, "pending")):
            channel = self.channel()
            try:
                while True:
                    method, _, raw = channel.basic_get(queue, auto_ack=False)
                    if method is None:
                        break
                    message = json.loads(raw)
                    job = str(message["args"][0])
                    attempts = int(message.get("options", {}).get("retries", 0)) + 1
                    states[job] = JobState(job, state, attempts=attempts, detail={"queue": queue,
                                                                                   "message": message["message_id"]})
            except pika.exceptions.ChannelClosedByBroker as exc:
                if exc.reply_code != NOT_FOUND:
                    raise
                continue  # the broker closed the channel for it
            channel.close()  # every message fetched goes back to its queue
        return sorted(states.values(), key=lambda s: s.job)

    def completion(self, job: str, token: str) -> str:
        self.asked.setdefault(job, set()).add(token)
        channel = self.channel()
        try:
            for queue in (self.tasks.QUEUE, self.tasks.DELAYED):
                if channel.queue_declare(queue, passive=True).method.consumer_count:
                    return "unknown"  # a consumer may hold the job's delivery unacknowledged
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != NOT_FOUND:
                raise
            return "unknown"
        finally:
            if channel.is_open:
                channel.close()
        if any(state.job == job for state in self.snapshot()):
            return "unknown"
        # an ack removed it; with two executions that reported one, which of them the broker does not record
        return "accepted" if len(self.asked[job]) == 1 else "done"

    def close(self) -> None:
        if self._broker is not None:
            self._broker.close()
        with self.lock:
            for connection in self.connections:
                if connection.is_open:
                    try:
                        connection.close()
                    except pika.exceptions.AMQPError:
                        pass
