"""dramatiq_redis control side: the producer and the snapshot, through Dramatiq's own API and its documented
Redis key layout.

It loads the target's tasks.py (not into sys.modules: the suite's process may load other targets) and
enqueues by sending the actor, `chaos_job.send(job.id, payload)`: RedisBroker's `enqueue` stores
Dramatiq's JSON message in `<ns>:default.msgs` under a fresh `redis_message_id` and pushes that id on
the list `<ns>:default`. The control's broker never does queue maintenance (maintenance_chance 0): a dead
worker's messages come back only through the workers' own dispatches, as in production.

The snapshot reads, in one Lua script (atomic, as Dramatiq's own dispatch script is), the keys
dispatch.lua documents: the queue list and the delay queue list (pending), every `__acks__.<broker id>.*`
set (fetched but not yet acked: claimed by that broker process; a delayed retry a worker holds until its
eta is pending), the dead-letter set `<queue>.XQ` (dead), and the message hashes that hold each id's
message (whose first argument is the suite's job id). Dramatiq deletes an acked message, so a completed
job is absent; a message stored but in no list and no acks set would never be delivered again, and shows
pending (stuck, if it stays). A job with several messages (a retry is a new message) shows the most
active: claimed, then pending, then dead.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import redis

from chaos import Backend, Contract, Endpoint, Job, JobState, KeepsNoCompletions, load_module

READ_ALL = """
local ns = ARGV[1]
local q = ns .. ':' .. ARGV[2]
local acks = {}
for _, key in ipairs(redis.call('KEYS', ns .. ':__acks__.*')) do
  acks[#acks + 1] = key
  acks[#acks + 1] = redis.call('SMEMBERS', key)
end
return {redis.call('LRANGE', q, 0, -1), redis.call('HGETALL', q .. '.msgs'),
        redis.call('LRANGE', q .. '.DQ', 0, -1), redis.call('HGETALL', q .. '.DQ.msgs'),
        redis.call('ZRANGE', q .. '.XQ', 0, -1), redis.call('HGETALL', q .. '.XQ.msgs'), acks}"""
RANK = {"claimed": 3, "pending": 2, "dead": 1}


def load_tasks() -> ModuleType:
    return load_module(Path(__file__).with_name("tasks.py"), "dramatiq_redis_tasks", "dramatiq_redis tasks.py")


def pairs(flat: list[Any]) -> dict[str, str]:
    return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Control(KeepsNoCompletions):
    """Workers vouch for their own acks (worker.py reads the acks set before each), so completion() is
    KeepsNoCompletions' "unknown": it is never asked."""

    shows_deliveries: ClassVar[bool] = True  # a fetched message stays in its broker process's acks set

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        tasks = load_tasks()
        self.prefix = backend.namespace
        self.namespace = tasks.namespace_of(backend.namespace)
        self.queue = tasks.QUEUE
        self.broker: Any = tasks.broker_for(backend.endpoint.url, backend.namespace,
                                            {**params, "maintenance_chance": 0})
        self.actor: Any = tasks.define_actor(self.broker, contract.max_attempts or 1, params)
        self.read_all = self.broker.client.register_script(READ_ALL)

    def setup(self) -> None:
        """Dramatiq makes its keys as it goes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.actor.send(job.id, job.payload())

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_NAMESPACE": self.prefix}

    def snapshot(self) -> list[JobState]:
        queue, msgs, delayed, delayed_msgs, dead, dead_msgs, acks = self.read_all(args=[self.namespace, self.queue])
        stored = {**pairs(msgs), **pairs(delayed_msgs)}
        holders: dict[str, tuple[str, str]] = {}  # message id -> (broker id, acks set's queue)
        marker = f"{self.namespace}:__acks__."
        for i in range(0, len(acks), 2):
            broker_id, _, queue_name = _text(acks[i])[len(marker):].partition(".")
            for member in acks[i + 1]:
                holders[_text(member)] = (broker_id, queue_name)
        waiting = {_text(m) for m in [*queue, *delayed]}
        found: dict[str, JobState] = {}

        def put(raw: str, state: str, detail: dict[str, Any]) -> None:
            message = json.loads(raw)
            job = str(message["args"][0])
            attempts = int(message.get("options", {}).get("retries", 0)) + 1
            current = found.get(job)
            if current is None or RANK[state] > RANK[current.state]:
                found[job] = JobState(job, state, attempts=attempts,
                                      detail={**detail, "message": message["message_id"]})

        for message_id, raw in stored.items():
            holder = holders.get(message_id)
            if holder is not None and not holder[1].endswith(".DQ"):
                put(raw, "claimed", {"broker_id": holder[0], "redis_message_id": message_id})
            elif holder is not None:
                put(raw, "pending", {"delayed": True, "held_by": holder[0], "redis_message_id": message_id})
            else:
                put(raw, "pending", {"delayed": message_id in pairs(delayed_msgs), "redis_message_id": message_id,
                                     **({} if message_id in waiting else {"in_no_list": True})})
        for message_id, raw in pairs(dead_msgs).items():
            if message_id in {_text(m) for m in dead}:
                put(raw, "dead", {"redis_message_id": message_id})
        return sorted(found.values(), key=lambda state: state.job)

    def close(self) -> None:
        try:
            self.broker.client.close()
        except redis.RedisError:
            pass
