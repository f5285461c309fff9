"""Control side of the RabbitMQ targets: the durable queues, enqueue with publisher confirms, each
worker's connection settings, and the final snapshot, read from the queues themselves.

A broker does not report a message's state, and an acknowledged message is gone: the snapshot fetches
every message of both queues without acknowledging them, and puts them back by closing its channel. A
job in the queue is pending, in the dead queue dead, and in neither absent (acknowledged, out for
delivery, or lost): hence `shows_deliveries = False`. The final snapshot runs after every worker
stopped, when every unacknowledged delivery has been requeued.
"""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.queue_model import Job, JobState, KeepsNoCompletions
from chaos.worker.rabbitmq import ATTEMPTS, CONTROL, DEAD, QUEUE, body, declare, parameters, parse, persistent

NOT_FOUND = 404  # AMQP's reply code for a queue the broker does not have


class RabbitMQQueueControl(KeepsNoCompletions):
    shows_deliveries = False  # an unacknowledged delivery is in no queue

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.params = params
        self.contract = contract
        self._connection: Any = None

    def channel(self) -> Any:
        """A fresh channel on one connection, reopened after the broker restarted under it."""
        if self._connection is None or self._connection.is_closed:
            self._connection = pika.BlockingConnection(parameters(self.url, name=CONTROL))
        return self._connection.channel()

    def setup(self) -> None:
        """Declare the queues, then close the connection: the next one opens after an observer is installed,
        whose record then knows it by name (the snapshot's basic.get is the suite's reading, not a claim)."""
        channel = self.channel()
        declare(channel)
        channel.close()
        self.close()

    def enqueue(self, jobs: list[Job]) -> None:
        channel = self.channel()
        channel.confirm_delivery()  # each publish returns once the broker has the message (on disk: persistent)
        for job in jobs:
            channel.basic_publish("", QUEUE, body(job.id, job.payload()), persistent(), mandatory=True)
        channel.close()

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url}

    def snapshot(self) -> list[JobState]:
        """A queue the broker no longer has (a crash soon after its declaration can lose it, and the
        messages in it) holds none of the jobs: they show absent."""
        states: dict[str, JobState] = {}
        for queue, state in ((DEAD, "dead"), (QUEUE, "pending")):
            channel = self.channel()
            try:
                while True:
                    method, properties, raw = channel.basic_get(queue, auto_ack=False)
                    if method is None:
                        break
                    job, _ = parse(raw)
                    attempts = int((properties.headers or {}).get(ATTEMPTS, 0))
                    states[job] = JobState(job, state, attempts=attempts)
            except pika.exceptions.ChannelClosedByBroker as exc:
                if exc.reply_code != NOT_FOUND:
                    raise
                continue  # the broker closed the channel for it
            channel.close()  # every message fetched goes back to its queue
        return sorted(states.values(), key=lambda s: s.job)

    def close(self) -> None:
        if self._connection is not None and self._connection.is_open:
            self._connection.close()
