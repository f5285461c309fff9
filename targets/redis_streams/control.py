"""redis_streams control side: the run's stream and its consumer group, enqueue by XADD, and the final
snapshot from Redis's own record of the group (the stream, its pending entries, the done hash and the
dead-letter stream), read in one script so no claim or ack falls between two reads."""

from __future__ import annotations

import json
from typing import Any

import redis

from chaos import Backend, Contract, Endpoint, Job, JobState, events
from chaos.worker.redis import entry
from chaos.worker.redis_streams import GROUP, StreamKeys, worker_of

PEL_LIMIT = 100000  # more pending entries than any run makes
# KEYS: stream, done hash, dead stream; ARGV: group, PEL limit.
READ_ALL = """
return {redis.call('XRANGE', KEYS[1], '-', '+'), redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', ARGV[2]),
        redis.call('HGETALL', KEYS[2]), redis.call('XRANGE', KEYS[3], '-', '+')}"""


def job_of(fields: list[Any]) -> str:
    """The suite's job id in a stream entry's fields (`job` holds chaos.worker.redis.entry's JSON)."""
    values = dict(zip(fields[::2], fields[1::2], strict=True))
    return str(json.loads(values["job"])["id"])


class Control:
    shows_deliveries = True  # a delivered, unacknowledged entry is in the group's pending entries list

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.keys = StreamKeys(backend.namespace)
        self.client: redis.Redis = redis.Redis.from_url(backend.endpoint.url, socket_timeout=5,
                                                        socket_connect_timeout=5, decode_responses=True)
        self.read_all = self.client.register_script(READ_ALL)

    def setup(self) -> None:
        """The stream and its group, which delivers from the stream's first entry."""
        self.client.xgroup_create(self.keys.stream, GROUP, id="0", mkstream=True)

    def enqueue(self, jobs: list[Job]) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            for job in jobs:
                pipe.xadd(self.keys.stream, {"job": entry(job.id, job.payload())})
            pipe.execute()

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.keys.prefix}

    def completion(self, job: str, token: str) -> str:
        """The done hash names the token of the claim whose ack completed each job."""
        return "accepted" if self.client.hget(self.keys.done, job) == token else "unknown"

    def snapshot(self) -> list[JobState]:
        """Each entry of the stream: done (the done hash, naming the completing claim's token), dead (the
        dead-letter stream, with its delivery count), claimed (pending for a consumer: its worker, and the
        delivery counter as the attempts), else pending (not yet delivered)."""
        keys = self.keys
        entries, pel, done_flat, dead = self.read_all(keys=[keys.stream, keys.done, keys.dead],
                                                      args=[GROUP, PEL_LIMIT])
        done = {str(done_flat[i]): str(done_flat[i + 1]) for i in range(0, len(done_flat), 2)}
        pending = {str(entry_id): (str(consumer), int(count)) for entry_id, consumer, _, count in pel}
        found: dict[str, JobState] = {}
        for entry_id, fields in entries:
            job = job_of(fields)
            if job in done:
                found[job] = JobState(job, "done", detail={"token": done[job]})
            elif entry_id in pending:
                consumer, count = pending[entry_id]
                found[job] = JobState(job, "claimed", worker_of(consumer), count, {"consumer": consumer})
            else:
                found[job] = JobState(job, "pending")
        for _, fields in dead:
            values = dict(zip(fields[::2], fields[1::2], strict=True))
            job = job_of(fields)
            found[job] = JobState(job, "dead", attempts=int(values["deliveries"]))
        return sorted(found.values(), key=lambda state: state.job)

    def close(self) -> None:
        self.client.close()
