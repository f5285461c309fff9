"""redis_streams control side: the run's stream and its consumer group, enqueue by XADD, and the final
snapshot from Redis's own record of the group (the stream, its pending entries, the done hash and the
dead-letter stream), read in one script so no claim or ack falls between two reads. The workers'
connection settings, the completion question (the done hash) and the client are the redis kind's."""

from __future__ import annotations

from typing import Any

from chaos import Backend, Contract, Job, JobState
from chaos.backends.redis.control import RedisQueueControl
from chaos.worker.redis import entry
from chaos.worker.redis_streams import GROUP, StreamKeys, job_of, worker_of

PEL_LIMIT = 100000  # more pending entries than any run makes
# KEYS: stream, done hash, dead stream; ARGV: group, PEL limit. A stream without its group (a server restarted
# without persistence forgot both) has nothing pending.
READ_ALL = """
local pel = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', ARGV[2])
if pel['err'] then pel = {} end
return {redis.call('XRANGE', KEYS[1], '-', '+'), pel, redis.call('HGETALL', KEYS[2]),
        redis.call('XRANGE', KEYS[3], '-', '+')}"""


class Control(RedisQueueControl):
    """The done hash is the redis kind's (`<prefix>done`, job -> the completing claim's token)."""

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        super().__init__(backend, params, contract)
        self.streams = StreamKeys(self.keys.prefix)
        self.read_group = self.client.register_script(READ_ALL)

    def setup(self) -> None:
        """The stream and its group, which delivers from the stream's first entry."""
        self.client.xgroup_create(self.streams.stream, GROUP, id="0", mkstream=True)

    def enqueue(self, jobs: list[Job]) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            for job in jobs:
                pipe.xadd(self.streams.stream, {"job": entry(job.id, job.payload())})
            pipe.execute()

    def snapshot(self) -> list[JobState]:
        """Each entry of the stream: done (the done hash, naming the completing claim's token), dead (the
        dead-letter stream, with its delivery count), claimed (pending for a consumer: its worker, and the
        delivery counter as the attempts), else pending (not yet delivered)."""
        keys = self.streams
        entries, pel, done_flat, dead = self.read_group(keys=[keys.stream, keys.done, keys.dead],
                                                        args=[GROUP, PEL_LIMIT])
        done = {str(done_flat[i]): str(done_flat[i + 1]) for i in range(0, len(done_flat), 2)}
        pending = {str(entry_id): (str(consumer), int(count)) for entry_id, consumer, _, count in pel}
        found: dict[str, JobState] = {}
        for entry_id, fields in entries:
            job = job_of(fields)
            if job is None:
                continue  # not an entry of the suite's
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
            if job is not None:
                found[job] = JobState(job, "dead", attempts=int(values["deliveries"]))
        return sorted(found.values(), key=lambda state: state.job)
