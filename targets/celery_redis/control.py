"""celery_redis control side: the producer and the observer, through Celery's API and kombu's Redis keys.

It loads the target's tasks.py as the worker does (module `tasks`) and enqueues by Celery's own producer,
`chaos_job.apply_async((job.id, payload))`: kombu pushes Celery's message on the list `<namespace>celery`.
Each call returns Celery's AsyncResult, whose id is the task's: the control keeps task id -> job id.

The snapshot reads, a later source winning:
- the result backend (Celery's Redis backend, `AsyncResult(id).state`, key
  `<namespace>celery-task-meta-<id>`): SUCCESS is done, FAILURE (retries spent) dead;
- kombu's `unacked` hash (`<namespace>unacked`: delivery tag -> [message, exchange, routing key]), the
  messages delivered and not yet acknowledged, which kombu's visibility timeout restores: claimed, with no
  owner (kombu does not record which worker holds a delivery);
- the queue lists (`<namespace>celery`, and the priority lists kombu names `celery\\x06\\x16<n>`), read
  with LRANGE, which takes nothing: pending.
Under acks=early a message Celery acknowledged is gone from every key before its task ran, so a job being
executed is in none of them: shows_deliveries = False (a job counts as drained once it is dead or an ack
of it was accepted).

Celery completes a task itself (it stores the result, then acknowledges the message): the worker reports
the broker's answer to that ack where it has one (worker.py), and where it has none (ok null) `completion`
answers from the result backend, naming it as its source: the task's stored result (its job id) proves it
ran to completion, not that the broker took its ack.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import redis

from chaos import Backend, Contract, Endpoint, Job, JobState, load_module

PRIORITY_SEP = "\x06\x16"  # kombu's Redis transport: the separator of a priority list's name
PRIORITIES = (3, 6, 9)  # kombu's default priority_steps besides 0 (whose list is the queue's own name)


def load_tasks() -> ModuleType:
    """tasks.py, named `tasks` as the worker imports it; not put in sys.modules (the suite's process may
    load other targets)."""
    return load_module(Path(__file__).with_name("tasks.py"), "tasks", "celery_redis tasks.py")


def decode(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The suite's job id and Celery's headers from kombu's stored message (a JSON object, its body base64:
    the body is Celery's protocol 2, [args, kwargs, embed])."""
    body = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    args = json.loads(body)[0]
    return str(args[0]), dict(message.get("headers") or {})


class Control:
    shows_deliveries: ClassVar[bool] = False

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.tasks = load_tasks()
        self.namespace = backend.namespace
        self.app: Any = self.tasks.app_for(backend.endpoint.url, self.namespace, str(params["acks"]))
        self.chaos_job: Any = self.tasks.define_task(self.app, contract.max_attempts or 1)
        self.client = redis.Redis.from_url(backend.endpoint.url, socket_timeout=3, socket_connect_timeout=3,
                                          decode_responses=True)
        self.jobs: dict[str, str] = {}  # Celery's task id -> the suite's job id

    def setup(self) -> None:
        """kombu makes its keys as it goes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            result = self.chaos_job.apply_async((job.id, job.payload()))
            self.jobs[str(result.id)] = job.id

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_NAMESPACE": self.namespace}

    def snapshot(self) -> list[JobState]:
        found: dict[str, JobState] = {}
        for task_id, job in self.jobs.items():
            state = self.app.AsyncResult(task_id).state
            if state == "SUCCESS":
                found[job] = JobState(job, "done", detail={"task": task_id})
            elif state == "FAILURE":
                found[job] = JobState(job, "dead", detail={"task": task_id})
        for tag, value in self.client.hgetall(f"{self.namespace}unacked").items():
            job, headers = decode(json.loads(value)[0])  # [message, exchange, routing key]
            found[job] = JobState(job, "claimed", attempts=int(headers.get("retries") or 0),
                                  detail={"task": str(headers.get("id")), "delivery_tag": str(tag)})
        queue = f"{self.namespace}{self.tasks.QUEUE}"
        for key in [queue, *(f"{queue}{PRIORITY_SEP}{n}" for n in PRIORITIES)]:
            for raw in self.client.lrange(key, 0, -1):
                job, headers = decode(json.loads(raw))
                found[job] = JobState(job, "pending", attempts=int(headers.get("retries") or 0),
                                      detail={"task": str(headers.get("id"))})
        return sorted(found.values(), key=lambda s: s.job)

    def completion(self, job: str, token: str) -> tuple[str, str]:
        """Accepted, from the result store, where the result backend holds the job id as the result of the
        token's task id (the token is `<task id>:<attempt>:<nonce>`, tasks.new_token); else unknown. The
        result backend records that a task ran to completion, not whether the broker took its ack (a worker
        whose ack failed has stored its result all the same): the checker counts the job completed, and
        judges no ack by it (the worker reports the broker's answer to its ack, worker.py)."""
        task_id = token.split(":")[0]
        if self.jobs.get(task_id) != job:
            return "unknown", "result-store"
        result = self.app.AsyncResult(task_id)
        return "accepted" if result.state == "SUCCESS" and result.result == job else "unknown", "result-store"

    def close(self) -> None:
        self.client.close()
