"""rq_redis control side: the producer and the observer, through RQ's own API.

`enqueue` calls `Queue.enqueue('tasks.chaos_job', job.id, payload, ...)` with RQ's documented callbacks
(`Callback('tasks.on_success')`, `Callback('tasks.on_failure')`) and, where the contract allows more than
one attempt, `Retry(max=max_attempts - 1)` (docs/docs/exceptions.md). The control keeps RQ's job id for
each of the suite's jobs (RQ's ids are uuids; the suite's id is the job's first argument).

The snapshot reads each job's status from its hash in Redis (`Job.fetch_many` and `get_status`), RQ's own
record: `queued`, `scheduled` and `deferred` are pending; `started` is claimed, by the worker RQ names
(`job.worker_name`, `w1.<pid>`: the suite's worker id before the dot); `finished` is done; `failed`,
`stopped` and `canceled` are dead. A job whose hash is gone is absent. It never calls a registry method
that runs RQ's cleanup (`get_job_ids()` does, by default): the control must observe the queue, never
recover its jobs.

RQ completes a job itself, after the success callback sent the ack (ok null): `completion` answers from the
job's status, `finished` being RQ's word that the completion took effect.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from redis import Redis
from redis.exceptions import RedisError
from rq import Callback, Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job as RQJob
from rq.job import JobStatus

from chaos import Backend, Contract, Endpoint, HarnessError, Job, JobState, load_module

PENDING = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED}
DEAD = {JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}


def load_names() -> ModuleType:
    """tasks_names.py, without putting it in sys.modules (the suite's process may load other targets)."""
    return load_module(Path(__file__).with_name("tasks_names.py"), "rq_redis_tasks_names", "rq_redis tasks_names.py")


class Control:
    shows_deliveries: ClassVar[bool] = True

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        names = load_names()
        self.namespace = backend.namespace
        self.max_attempts = contract.max_attempts or 1
        self.redis = Redis.from_url(backend.endpoint.url, socket_timeout=5, socket_connect_timeout=5)
        self.queue = Queue(names.queue_name(backend.namespace), connection=self.redis)
        self.jobs: dict[str, str] = {}  # RQ's job id -> the suite's job id

    def setup(self) -> None:
        """RQ makes its keys as it goes: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        retry = Retry(max=self.max_attempts - 1) if self.max_attempts > 1 else None
        for job in jobs:
            queued = self.queue.enqueue("tasks.chaos_job", job.id, job.payload(), retry=retry,
                                        on_success=Callback("tasks.on_success"),
                                        on_failure=Callback("tasks.on_failure"))
            self.jobs[str(queued.id)] = job.id

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The worker's own way to Redis (`rq worker --url`), and the run's namespace (the queue's name)."""
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_NAMESPACE": self.namespace}

    def snapshot(self) -> list[JobState]:
        ids = list(self.jobs)
        found: list[JobState] = []
        for rq_id, rq_job in zip(ids, self._fetch(ids), strict=True):
            if rq_job is None:
                continue  # its hash is gone: absent
            job = self.jobs[rq_id]
            status = rq_job.get_status(refresh=False)
            detail = {"rq_id": rq_id, "status": str(status.value if status is not None else None)}
            left = rq_job.retries_left
            attempts = None if left is None else self.max_attempts - 1 - int(left)
            if status in PENDING:
                found.append(JobState(job, "pending", attempts=attempts, detail=detail))
            elif status == JobStatus.STARTED:
                owner = str(rq_job.worker_name or "").partition(".")[0] or None
                found.append(JobState(job, "claimed", owner=owner, detail={**detail, "rq_worker": rq_job.worker_name}))
            elif status == JobStatus.FINISHED:
                found.append(JobState(job, "done", detail=detail))
            elif status in DEAD:
                found.append(JobState(job, "dead", detail=detail))
        return sorted(found, key=lambda state: state.job)

    def completion(self, job: str, token: str) -> str:
        """Accepted where RQ's record of the token's job (`<rq id>:<attempt>`) says `finished`; else unknown.
        A Redis error propagates: the run asks again."""
        rq_id = token.rpartition(":")[0]
        if self.jobs.get(rq_id) != job:
            return "unknown"
        (rq_job,) = self._fetch([rq_id])
        if rq_job is not None and rq_job.get_status(refresh=False) == JobStatus.FINISHED:
            return "accepted"
        return "unknown"

    def _fetch(self, ids: list[str]) -> list[RQJob | None]:
        """RQ's record of each job: None where it has none, or only a fragment (after a crash of a Redis
        without persistence, a worker's heartbeat can write `last_heartbeat` back into a forgotten job's
        hash, and RQ refuses to load it)."""
        try:
            return RQJob.fetch_many(ids, connection=self.redis)
        except NoSuchJobError:  # one of them is a fragment: each on its own
            return [self._fetch_one(rq_id) for rq_id in ids]

    def _fetch_one(self, rq_id: str) -> RQJob | None:
        try:
            (rq_job,) = RQJob.fetch_many([rq_id], connection=self.redis)
        except NoSuchJobError:
            return None
        return rq_job

    def close(self) -> None:
        """Delete the run's RQ keys, which do not start with the run's prefix (RQ names them `rq:queue:<name>`,
        `rq:job:<id>`, `rq:wip:<name>`, `rq:executions:<id>`, ...): every `rq:*` key naming the run's queue or
        one of its jobs. On the run's own server this is moot; on an external one it leaves nothing behind."""
        try:
            patterns = [f"rq:*{self.queue.name}*", *(f"rq:*{rq_id}*" for rq_id in self.jobs)]
            for pattern in patterns:
                keys = list(self.redis.scan_iter(match=pattern, count=1000))
                if keys:
                    self.redis.delete(*keys)
        except RedisError as exc:
            raise HarnessError(f"could not delete RQ's keys of queue {self.queue.name!r}; "
                               f"delete rq:*{self.queue.name}* and its jobs' keys by hand: {exc}") from exc
        finally:
            self.redis.close()
