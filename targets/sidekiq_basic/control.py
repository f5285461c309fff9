"""sidekiq_basic control side: jobs in Sidekiq's own Redis format, and the final snapshot read from
Sidekiq's own keys, all under the run's key prefix (the worker gives redis-namespace the same prefix).

It builds on `chaos.RedisQueueControl` for the connection, the run's prefix and each worker's variables
(CHAOS_BACKEND_URL, its own way to Redis, and CHAOS_NAMESPACE, the prefix); the key layout and the
snapshot are Sidekiq's. A job is the JSON hash Sidekiq::Client pushes for a job class with default options
(class, args, jid, queue, retry, created_at, enqueued_at), LPUSHed on `queue:default` (BRPOP takes the
oldest first) with the queue in the `queues` set. Its args carry the suite's job id and the handler's
payload.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from chaos import Backend, Contract, Job, JobState
from chaos.backends.redis.control import RedisQueueControl

QUEUE = "default"
JOB_CLASS = "ChaosJob"  # worker.rb's job class

# Everything the snapshot reads, in one atomic script. KEYS: the queue list, the retry set, the dead set,
# the done hash (job -> jid, written by the worker once perform returned).
READ_ALL = """
return {redis.call('LRANGE', KEYS[1], 0, -1), redis.call('ZRANGE', KEYS[2], 0, -1),
        redis.call('ZRANGE', KEYS[3], 0, -1), redis.call('HKEYS', KEYS[4])}"""


def sidekiq_job(job: Job, now: float) -> str:
    """The JSON Sidekiq::Client would push for `ChaosJob.perform_async(job.id, payload)`."""
    return json.dumps({"class": JOB_CLASS, "args": [job.id, job.payload()], "jid": secrets.token_hex(12),
                       "queue": QUEUE, "retry": True, "created_at": now, "enqueued_at": now})


class Control(RedisQueueControl):
    # Basic fetch leaves no trace of a job being worked: it is in no key from its BRPOP to its completion
    # record. So a job counts as drained only once dead, or once an ack of it was accepted.
    shows_deliveries = False

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        super().__init__(backend, params, contract)
        prefix = self.keys.prefix
        self.queue = prefix + "queue:" + QUEUE
        self.queues = prefix + "queues"
        self.retry = prefix + "retry"
        self.dead = prefix + "dead"
        self.done = prefix + "done"
        self.read_sidekiq = self.client.register_script(READ_ALL)

    def setup(self) -> None:
        """Sidekiq creates its keys as it goes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        if not jobs:
            return
        now = time.time()
        with self.client.pipeline(transaction=True) as pipe:
            pipe.sadd(self.queues, QUEUE)
            pipe.lpush(self.queue, *(sidekiq_job(job, now) for job in jobs))
            pipe.execute()

    def snapshot(self) -> list[JobState]:
        """Where each job is, read atomically: in the queue list or the retry set (pending: due again), the
        dead set (past its attempts), the done hash (completed); a job in none of them is absent (fetched,
        and never completed)."""
        reply: list[Any] = self.read_sidekiq(keys=[self.queue, self.retry, self.dead, self.done])
        queued, retrying, dead, done = reply
        found: dict[str, JobState] = {job: JobState(job, "done") for job in map(str, done)}
        for raw in dead:
            job, attempts = _identify(raw)
            found[job] = JobState(job, "dead", attempts=attempts)
        for raw in [*retrying, *queued]:
            job, attempts = _identify(raw)
            found[job] = JobState(job, "pending", attempts=attempts)
        return sorted(found.values(), key=lambda state: state.job)


def _identify(raw: str) -> tuple[str, int | None]:
    """The suite's job id in a Sidekiq job, and how many of its executions failed (retry_count counts
    from 0 at the first failure; absent before any)."""
    data = json.loads(raw)
    count = data.get("retry_count")
    return str(data["args"][0]), None if count is None else int(count) + 1
