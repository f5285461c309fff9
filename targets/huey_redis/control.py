"""huey_redis control side: the producer and the observer, through huey's own API.

It loads the target's tasks.py as the consumer does (module `tasks`, so the task is registered under the
same name, tasks.chaos_job) and enqueues by calling the task: `chaos_job(job.id, payload)` pushes huey's
own pickled message on `huey.redis.<name>`. Each call returns huey's Result, whose id is the task's: the
control keeps task id -> job id, since huey's result store is keyed by task id.

The snapshot reads huey's own keys through its API, in this order, a later state winning: the schedule
(`huey.scheduled()`: a retry waiting for its time, pending), the queue (`huey.pending()`: pending), then
the result store (`huey.all_results()`, and `huey.result(id, preserve=True)` for each of the run's tasks
in it): the job's id as the value is done, a stored error (TaskException) is dead, after its last retry.
A job in none of them is absent: a consumer popped it and has not finished it, or it is gone. huey keeps
nothing for a task being executed, so the snapshot never shows one claimed (shows_deliveries = False: a
job counts as drained only once it is dead or an ack of it was accepted).

huey completes a task itself, after the task returned: the worker's ack says ok null, and `completion`
answers from the result store whether that completion took effect (the task's stored result is its job
id). huey never refuses a completion (no other consumer can hold a popped task), so the answer is
accepted or unknown.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from huey.exceptions import TaskException
from redis.exceptions import RedisError

from chaos import Backend, Contract, Endpoint, HarnessError, Job, JobState, load_module


def load_tasks() -> ModuleType:
    """tasks.py, named `tasks` as the consumer imports it (huey registers a task by module and name). It is
    not put in sys.modules: the suite's process may load other targets."""
    return load_module(Path(__file__).with_name("tasks.py"), "tasks", "huey_redis tasks.py")


class Control:
    shows_deliveries: ClassVar[bool] = False

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        tasks = load_tasks()
        self.namespace = backend.namespace
        self.max_attempts = contract.max_attempts or 1
        self.pool = tasks.pool_for(backend.endpoint.url)
        self.huey: Any = tasks.huey_for(self.pool, backend.namespace)
        self.chaos_job: Any = tasks.define_task(self.huey, self.max_attempts)
        self.jobs: dict[str, str] = {}  # huey's task id -> the suite's job id

    def setup(self) -> None:
        """huey makes its keys as it goes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            result = self.chaos_job(job.id, job.payload())
            self.jobs[str(result.id)] = job.id

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The worker's own way to Redis, and the run's namespace (huey's name: tasks.huey_for)."""
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_NAMESPACE": self.namespace}

    def snapshot(self) -> list[JobState]:
        found: dict[str, JobState] = {}
        for task in [*self.huey.scheduled(), *self.huey.pending()]:
            job = str(task.args[0])
            found[job] = JobState(job, "pending", attempts=self.max_attempts - 1 - int(task.retries),
                                  detail={"task": task.id})
        for task_id in self.huey.all_results():
            if task_id not in self.jobs:
                continue  # a key of huey's own in the result hash (a revocation, a lock), not a result of ours
            job = self.jobs[task_id]
            try:
                self.huey.result(task_id, preserve=True)
            except TaskException as exc:  # the error huey stores once a task has no retry left
                left = int(exc.metadata.get("retries") or 0)
                found[job] = JobState(job, "dead", attempts=self.max_attempts - left,
                                      detail={"task": task_id, "error": str(exc)})
                continue
            found[job] = JobState(job, "done", detail={"task": task_id})
        return sorted(found.values(), key=lambda state: state.job)

    def completion(self, job: str, token: str) -> str:
        """Accepted where huey's result store holds the job's result under the token's task id (the token is
        `<task id>:<attempt>`, tasks.token_of); else unknown. A Redis error propagates: the run asks again."""
        task_id = token.rpartition(":")[0]
        if self.jobs.get(task_id) != job:
            return "unknown"
        try:
            stored = self.huey.result(task_id, preserve=True)
        except TaskException:  # the error huey stores once a task has no retry left: no completion took effect
            return "unknown"
        return "accepted" if stored == job else "unknown"

    def close(self) -> None:
        """Delete the run's huey keys (queue, schedule, results, counters: `huey.flush()`), which an external
        server's end-of-run deletion of the run's prefix does not reach (they start with `huey.`)."""
        try:
            self.huey.flush()
        except RedisError as exc:
            raise HarnessError(f"could not delete huey's keys for {self.namespace!r} (huey.redis.{self.namespace}, "
                               f"huey.schedule.{self.namespace}, huey.results.{self.namespace}, "
                               f"huey.counters.{self.namespace}); delete them by hand: {exc}") from exc
        finally:
            self.pool.disconnect()
