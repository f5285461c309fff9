"""celery_rabbitmq control side: the producer and the observer, through Celery's API and the broker's queue.

It loads the target's tasks.py as the worker does (module `tasks`) and enqueues by Celery's own producer,
`chaos_job.apply_async((job.id, payload))`: Celery's message (protocol 2, JSON) on its default queue
`celery`. Each call returns Celery's AsyncResult, whose id is the task's: the control keeps task id -> job
id, since the result backend is keyed by task id.

The snapshot reads, a later source winning:
- the result backend (Celery's file-system backend, `AsyncResult(id).state`): SUCCESS is done, FAILURE
  (a task whose retries are spent) is dead;
- the broker's own record, the `celery` queue: every message in it is fetched without acknowledging it
  (basic.get, as the bundled RabbitMQ control does) and put back by closing the channel: pending.
A message out for delivery is in no queue, and under acks=early one the worker acknowledged is gone
before its task ran, so the snapshot never shows a job claimed: shows_deliveries = False (a job counts as
drained once it is dead or an ack of it was accepted).

Celery completes a task itself (it stores the result, then acknowledges the message): the worker reports
a failed ack as the broker's refusal and a sent one with ok null (AMQP confirms no ack, worker.py), and
`completion` answers from the result backend, naming it as its source: the task's stored result (its job
id) proves it ran to completion, not that the broker took its ack.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pika
import pika.exceptions

from chaos import Backend, Contract, Endpoint, Job, JobState, load_module

NOT_FOUND = 404  # AMQP's reply code for a queue the broker does not have (before Celery declared it)


def load_tasks() -> ModuleType:
    """tasks.py, named `tasks` as the worker imports it; not put in sys.modules (the suite's process may
    load other targets)."""
    return load_module(Path(__file__).with_name("tasks.py"), "tasks", "celery_rabbitmq tasks.py")


def job_of_body(raw: bytes) -> tuple[str, dict[str, Any]]:
    """The suite's job id from a Celery message body (protocol 2: [args, kwargs, embed])."""
    args = json.loads(raw)[0]
    return str(args[0]), {}


class Control:
    shows_deliveries: ClassVar[bool] = False

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.tasks = load_tasks()
        self.url = backend.endpoint.url
        self.result_dir = tempfile.mkdtemp(prefix="chaos-celery-results-")
        self.app: Any = self.tasks.app_for(self.url, self.result_dir, str(params["acks"]))
        self.chaos_job: Any = self.tasks.define_task(self.app, contract.max_attempts or 1)
        self.jobs: dict[str, str] = {}  # Celery's task id -> the suite's job id
        self._connection: Any = None

    def channel(self) -> Any:
        if self._connection is None or self._connection.is_closed:
            params = pika.URLParameters(self.url)
            params.client_properties = {"connection_name": "chaos-control"}
            params.connection_attempts = 1
            params.socket_timeout = 3
            self._connection = pika.BlockingConnection(params)
        return self._connection.channel()

    def setup(self) -> None:
        """Celery declares its queue as it publishes and consumes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            result = self.chaos_job.apply_async((job.id, job.payload()))
            self.jobs[str(result.id)] = job.id

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_RESULT_DIR": self.result_dir}

    def snapshot(self) -> list[JobState]:
        found: dict[str, JobState] = {}
        for task_id, job in self.jobs.items():
            state = self.app.AsyncResult(task_id).state
            if state == "SUCCESS":
                found[job] = JobState(job, "done", detail={"task": task_id})
            elif state == "FAILURE":
                found[job] = JobState(job, "dead", detail={"task": task_id})
        channel = self.channel()
        try:
            while True:
                method, properties, raw = channel.basic_get(self.tasks.QUEUE, auto_ack=False)
                if method is None:
                    break
                headers = properties.headers or {}
                job, _ = job_of_body(raw)
                found[job] = JobState(job, "pending", attempts=int(headers.get("retries") or 0),
                                      detail={"task": str(headers.get("id")), "redelivered": method.redelivered})
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != NOT_FOUND:
                raise
            return sorted(found.values(), key=lambda s: s.job)
        channel.close()  # every message fetched goes back to the queue
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
        try:
            if self._connection is not None and self._connection.is_open:
                self._connection.close()
        finally:
            shutil.rmtree(self.result_dir, ignore_errors=True)
