"""Control side shared by the Redis targets: enqueue, each worker's connection settings, and the final
snapshot, over the key layout of `chaos.worker.redis.Keys`. It runs in the suite's process, connected
straight to the backend."""

from __future__ import annotations

import json
from typing import Any

import redis

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.queue_model import Job, JobState
from chaos.worker.redis import Keys, entry

# Everything the snapshot reads, in one atomic script: a reconciler moving a job between two reads
# would otherwise hide it from both. KEYS: attempts, done, dead, queue; ARGV: the processing lists' pattern.
READ_ALL = """
local lists = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  lists[#lists + 1] = key
  lists[#lists + 1] = redis.call('LRANGE', key, 0, -1)
end
return {redis.call('HGETALL', KEYS[1]), redis.call('HKEYS', KEYS[2]), redis.call('SMEMBERS', KEYS[3]),
        redis.call('LRANGE', KEYS[4], 0, -1), lists}"""


class RedisQueueControl:
    shows_deliveries = True  # the drain reads the snapshot: a taken job is in a processing list, or nowhere

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.keys = Keys(backend.namespace)
        self.params = params
        self.contract = contract
        self.client: redis.Redis = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5,
                                           retry_on_timeout=False, decode_responses=True)
        self.read_all = self.client.register_script(READ_ALL)

    def setup(self) -> None:
        """The queue is a list: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        if jobs:
            self.client.rpush(self.keys.queue, *(entry(job.id, job.payload()) for job in jobs))

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.keys.prefix}

    def completion(self, job: str, token: str) -> str:
        """The done hash names the token of the claim whose ack completed each job (the last one to): accepted
        where it is this one; else unknown, since a later completion may have overwritten this one's."""
        return "accepted" if self.client.hget(self.keys.done, job) == token else "unknown"

    def snapshot(self) -> list[JobState]:
        """Where each job is, read atomically: a processing list (claimed, by that list's worker), the queue
        (pending), the dead set, the done hash; a job in none of them is absent (popped and gone)."""
        keys = self.keys
        reply: list[Any] = self.read_all(keys=[keys.attempts, keys.done, keys.dead, keys.queue],
                                         args=[keys.processing_lists()])
        flat_attempts, done, dead, queue, lists = reply
        attempts = {str(flat_attempts[i]): int(flat_attempts[i + 1]) for i in range(0, len(flat_attempts), 2)}
        found: dict[str, JobState] = {}
        for job in map(str, done):
            found[job] = JobState(job, "done", attempts=attempts.get(job))
        for job in map(str, dead):
            found[job] = JobState(job, "dead", attempts=attempts.get(job))
        for raw in queue:
            job = json.loads(raw)["id"]
            found[job] = JobState(job, "pending", attempts=attempts.get(job))
        for key, entries in zip(lists[::2], lists[1::2], strict=True):
            owner = str(key)[len(keys.processing("")):].rpartition(":")[0]
            for raw in entries:
                job = json.loads(raw)["id"]
                found[job] = JobState(job, "claimed", owner, attempts.get(job))
        return sorted(found.values(), key=lambda state: state.job)

    def close(self) -> None:
        self.client.close()
