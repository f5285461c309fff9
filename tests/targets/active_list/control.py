"""active_list's control: enqueue (a job's JSON and its id on wait, in one transaction), each worker's
connection, and the snapshot from the jobs' JSON. Its completion answer is "done" for a completed job: the
JSON keeps the last completing execution only, so it cannot say whether a given ack was the one."""

from __future__ import annotations

import json
from typing import Any

import redis

from chaos import Backend, Contract, Endpoint, Job, JobState, events
from chaos.worker.redis import glob_escape

# ARGV: the job records' pattern. Every job's JSON, read atomically.
READ = """
local found = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do found[#found + 1] = redis.call('GET', key) end
return found"""
STATES = {"waiting": "pending", "active": "claimed", "completed": "done", "failed": "dead"}


class Control:
    shows_deliveries = True

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.prefix = backend.namespace
        self.client: redis.Redis = redis.Redis.from_url(backend.endpoint.url, decode_responses=True,
                                                        socket_timeout=5, socket_connect_timeout=5)
        self.read = self.client.register_script(READ)

    def setup(self) -> None:
        """The queue's keys appear with its first job."""

    def enqueue(self, jobs: list[Job]) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            for job in jobs:
                pipe.set(self.prefix + "job:" + job.id, json.dumps(
                    {"id": job.id, "payload": job.payload(), "status": "waiting", "worker": None, "attempt": 0,
                     "lock_until": 0}))
                pipe.rpush(self.prefix + "wait", job.id)
            pipe.execute()

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.prefix}

    def snapshot(self) -> list[JobState]:
        found = [json.loads(raw) for raw in self.read(args=[glob_escape(self.prefix) + "job:*"])]
        return sorted((JobState(job["id"], STATES[job["status"]], job["worker"] if job["status"] == "active" else None,
                                job["attempt"]) for job in found), key=lambda state: state.job)

    def completion(self, job: str, token: str) -> str:
        raw = self.client.get(self.prefix + "job:" + job)
        return "done" if raw is not None and json.loads(raw)["status"] == "completed" else "unknown"

    def close(self) -> None:
        self.client.close()
