"""Control side shared by the Redis targets: enqueue, each worker's connection settings, and the final
snapshot, over the key layout of `chaos.worker.redis.Keys`. It runs in the suite's process, connected
straight to the backend."""

from __future__ import annotations

import json

import redis

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.target import Job, JobState
from chaos.worker.redis import Keys, entry


class RedisQueueControl:
    def __init__(self, backend: Backend, params: dict[str, str], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.keys = Keys(backend.namespace)
        self.params = params
        self.contract = contract
        self.client: redis.Redis = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5,
                                           retry_on_timeout=False, decode_responses=True)

    def setup(self) -> None:
        """The queue is a list: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        if jobs:
            self.client.rpush(self.keys.queue, *(entry(job.id, job.payload()) for job in jobs))

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.keys.prefix}

    def snapshot(self) -> list[JobState]:
        """Where each job is: a processing list (claimed, by that list's worker), the queue (pending), the
        dead set, the done set; a job in none of them is absent (popped and gone)."""
        attempts = {job: int(count) for job, count in self.client.hgetall(self.keys.attempts).items()}
        found: dict[str, JobState] = {}
        for job in map(str, self.client.hkeys(self.keys.done)):
            found[job] = JobState(job, "done", attempts=attempts.get(job))
        for job in map(str, self.client.smembers(self.keys.dead)):
            found[job] = JobState(job, "dead", attempts=attempts.get(job))
        for raw in self.client.lrange(self.keys.queue, 0, -1):
            job = json.loads(raw)["id"]
            found[job] = JobState(job, "pending", attempts=attempts.get(job))
        for key in self.client.scan_iter(match=self.keys.processing("*"), count=1000):
            owner = key[len(self.keys.processing("")):].rpartition(":")[0]
            for raw in self.client.lrange(key, 0, -1):
                job = json.loads(raw)["id"]
                found[job] = JobState(job, "claimed", owner, attempts.get(job))
        return sorted(found.values(), key=lambda state: state.job)

    def close(self) -> None:
        self.client.close()
