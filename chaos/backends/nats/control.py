"""Control side of the NATS JetStream targets: the run's work-queue stream and its durable pull consumer
(explicit acks, AckWait = the contract's lease, MaxDeliver = its max_attempts), the stream that keeps the
server's dead-letter advisories, enqueue with JetStream's publish acks, each worker's connection
settings, and the snapshot, read from the server's own record.

A work-queue stream deletes a message once it is acked (or terminated), and the server tells no one which
of the messages it still holds are out for delivery: a message in the stream is pending, one named by a
dead-letter advisory (MAX_DELIVERIES, MSG_TERMINATED) dead, and one in neither absent (acked, or lost):
hence `shows_deliveries = False`. The final snapshot runs after every worker stopped.

The consumer, not the stream, decides what is delivered again: after a crash (SIGKILL) nats-server 2.9
recovers a file stream without the deletes of its last acks (written behind: still missing 3 s after
them) while the consumer's acks were already on disk, so the stream holds messages its consumer will
never deliver again. Such a message, at or below the consumer's ack floor, or delivered while the
consumer holds nothing unacknowledged, is done (`kept_by_stream` in its detail), not pending.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType, StreamConfig

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.errors import ConfigError
from chaos.queue_model import Job, JobState, KeepsNoCompletions
from chaos.worker.nats import TRANSIENT, JetStream, Names, body, parse

API_TIMEOUT_S = 5.0
RETRY_S = 15.0  # longer than a local server takes to restart
STORAGE = {"file": StorageType.FILE, "memory": StorageType.MEMORY}


class NatsQueueControl(KeepsNoCompletions):
    shows_deliveries = False  # the server keeps no per-message record of deliveries it shows

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.names = Names(backend.namespace)
        self.marker = backend.marker or None  # each stream's description: the run's marker (chaos.ownership)
        self.params = params
        self.contract = contract
        self.seqs: dict[str, int] = {}  # suite job -> its stream sequence
        self._client: JetStream | None = None

    @property
    def storage(self) -> StorageType:
        """The streams' storage (the target's `storage` parameter): file survives a server crash, memory not."""
        storage = str(self.params.get("storage", "file"))
        if storage not in STORAGE:
            raise ConfigError(f"Expected the parameter storage to be one of {', '.join(STORAGE)}, but got "
                              f"{storage!r}. Fix it in target.toml's [params] or -p storage=file.")
        return STORAGE[storage]

    def client(self) -> JetStream:
        """One connection, which reconnects by itself after a server restart."""
        if self._client is None:
            self._client = JetStream(self.url, "chaos-control")
        return self._client

    def call(self, request: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
        """A JetStream API request (`request(js)`), tried again through a reconnection (the server
        restarting) for up to RETRY_S; a definite answer (not found) is raised at once."""
        deadline = time.monotonic() + RETRY_S
        while True:
            client = self.client()
            try:
                return client.run(request(client.js), API_TIMEOUT_S)
            except nats.js.errors.NotFoundError:
                raise
            except TRANSIENT:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def setup(self) -> None:
        if self.contract.lease_s is None or self.contract.max_attempts is None:
            raise ConfigError("A JetStream target's contract needs lease_s (the consumer's AckWait) and max_attempts "
                              "(its MaxDeliver). Set both in target.toml's [contract].")
        jobs = StreamConfig(name=self.names.stream, subjects=[self.names.subject], description=self.marker,
                            retention=RetentionPolicy.WORK_QUEUE, storage=self.storage)
        dead = StreamConfig(name=self.names.dead_stream, subjects=self.names.dead_subjects, description=self.marker,
                            storage=self.storage)
        consumer = ConsumerConfig(durable_name=self.names.consumer, ack_policy=AckPolicy.EXPLICIT,
                                  ack_wait=self.contract.lease_s, max_deliver=self.contract.max_attempts)
        self.call(lambda js: js.add_stream(jobs))
        self.call(lambda js: js.add_stream(dead))
        self.call(lambda js: js.add_consumer(self.names.stream, consumer))

    def enqueue(self, jobs: list[Job]) -> None:
        """Each publish returns once the stream has stored the message (its PubAck)."""
        for job in jobs:
            self.seqs[job.id] = self.publish(job)

    def publish(self, job: Job) -> int:
        """The job's stream sequence; its id as the message id, so a publish tried again is stored once."""
        message = body(job.id, job.payload())
        return int(self.call(lambda js: js.publish(self.names.subject, message, headers={"Nats-Msg-Id": job.id})).seq)

    def message(self, stream: str, seq: int) -> Any:
        return self.call(lambda js: js.get_msg(stream, seq))

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.names.stream}

    def dead(self) -> dict[int, int]:
        """Stream sequence -> deliveries, of every message the server's advisories call dead."""
        found: dict[int, int] = {}
        try:
            state = self.call(lambda js: js.stream_info(self.names.dead_stream)).state
        except nats.js.errors.NotFoundError:
            return {}  # a memory stream a restart lost
        for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
            advisory = json.loads(self.message(self.names.dead_stream, seq).data or b"{}")
            found[int(advisory["stream_seq"])] = int(advisory.get("deliveries") or 0)
        return found

    def acked(self) -> Callable[[int], bool]:
        """Whether the consumer has acknowledged a stream sequence, as far as its info tells."""
        try:
            info = self.call(lambda js: js.consumer_info(self.names.stream, self.names.consumer))
        except nats.js.errors.NotFoundError:
            return lambda seq: False
        floor, delivered = int(info.ack_floor.stream_seq or 0), int(info.delivered.stream_seq or 0)
        settled = not info.num_ack_pending
        return lambda seq: seq <= floor or (settled and seq <= delivered)

    def snapshot(self) -> list[JobState]:
        """Each job by its stream sequence: dead when an advisory says so; pending while the stream holds it
        and the consumer has not acknowledged it (a sequence now naming another job, after a restart that
        lost the stream, does not count); else absent."""
        dead, acked, states = self.dead(), self.acked(), []
        for job, seq in self.seqs.items():
            if seq in dead:
                states.append(JobState(job, "dead", attempts=dead[seq], detail={"stream_seq": seq}))
                continue
            try:
                held, _ = parse(self.message(self.names.stream, seq).data)
            except nats.js.errors.NotFoundError:
                held = ""
            if held == job and acked(seq):
                states.append(JobState(job, "done", detail={"stream_seq": seq, "kept_by_stream": True}))
            else:
                states.append(JobState(job, "pending" if held == job else "absent", detail={"stream_seq": seq}))
        return states

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
