"""procrastinate_pg control side: procrastinate's schema, its producer, and its own table.

`setup()` applies procrastinate's schema with procrastinate's own schema manager
(`app.schema_manager.apply_schema()`, what `procrastinate schema --apply` runs), on the control's DSN: the
run's database on the run's own server, the run's schema first on the search_path on an external one,
so every procrastinate table, type and function of the run is the run's. `enqueue()` defers the task
through procrastinate's producer API (`chaos_job.defer(job=..., payload=...)`), so the suite's job id is
in procrastinate's own row (`args`).

The snapshot reads procrastinate's own table, `procrastinate_jobs` (its documented storage): 'todo' is
pending, 'doing' claimed (procrastinate keeps the worker's id, not the suite's name: the detail holds
it), 'succeeded' done, 'failed' dead (after its last attempt), 'cancelled' and 'aborted' dead.

procrastinate finishes a job itself after the task returned: the worker's ack says ok null, and
`completion` answers from the same table (below).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import procrastinate
import psycopg

from chaos import Backend, Contract, Endpoint, Job, JobState, load_module

DSN_VARIABLE = "CHAOS_POSTGRES_DSN"  # the variable a PostgreSQL worker reads its DSN from (probe-protocol.md)

STATES = {"todo": "pending", "doing": "claimed", "succeeded": "done", "failed": "dead",
          "cancelled": "dead", "aborted": "dead", "aborting": "claimed"}
SNAPSHOT = """
SELECT args->>'job', status::text, attempts, worker_id, id,
       (SELECT count(*) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type = 'started')
FROM procrastinate_jobs j WHERE task_name = %s AND args ? 'job' ORDER BY args->>'job'"""
COMPLETION = """
SELECT status::text, attempts,
       (SELECT count(*) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type = 'started')
FROM procrastinate_jobs j WHERE id = %s AND args->>'job' = %s"""


def load_tasks() -> ModuleType:
    """tasks.py, named `tasks` as the worker imports it. Not put in sys.modules: the suite's process may
    load other targets."""
    return load_module(Path(__file__).with_name("tasks.py"), "tasks", "procrastinate_pg tasks.py")


class Control:
    shows_deliveries: ClassVar[bool] = True  # a fetched job is 'doing' in procrastinate_jobs

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        tasks = load_tasks()
        self.tasks = tasks
        self.dsn: str = backend.dsn  # type: ignore[attr-defined]
        self.app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(
            conninfo=self.dsn, kwargs={"application_name": "chaos-control"}, min_size=1, max_size=2))
        self.chaos_job: Any = tasks.define_task(self.app, contract.max_attempts or 1)
        self._conn: psycopg.Connection[Any] | None = None
        self._open = False

    def _app(self) -> procrastinate.App:
        if not self._open:
            self.app.open()
            self._open = True
        return self.app

    def connection(self) -> psycopg.Connection[Any]:
        """One autocommit connection for reading procrastinate's table, reopened after a server restart."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5,
                                         application_name="chaos-control")
        return self._conn

    def query(self, sql: str, args: Any) -> list[tuple[Any, ...]]:
        try:
            return self.connection().execute(sql, args).fetchall()
        except psycopg.OperationalError:
            if self._conn is not None:
                self._conn.close()
            raise

    def setup(self) -> None:
        """procrastinate's own schema, applied by its schema manager."""
        self._app().schema_manager.apply_schema()

    def enqueue(self, jobs: list[Job]) -> None:
        app = self._app()
        for job in jobs:
            self.chaos_job.defer(job=job.id, payload=job.payload())
        del app

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The worker's (and the reconciler's) own way to the server: its endpoint's DSN."""
        return {DSN_VARIABLE: endpoint.url}

    def snapshot(self) -> list[JobState]:
        found = []
        for job, status, attempts, worker_id, job_id, started in self.query(SNAPSHOT, (self.tasks.TASK,)):
            state = STATES.get(status, "pending")
            found.append(JobState(job, state, None, int(started),
                                  {"procrastinate_id": job_id, "status": status, "attempts": attempts,
                                   "worker_id": worker_id}))
        return found

    def completion(self, job: str, token: str) -> str:
        """Accepted where procrastinate's row shows this execution's completion and no other's could be it:
        the job succeeded, it was started exactly as many times as the token's attempt, and its attempts
        column counts that attempt (procrastinate_finish_job_v1 adds one when it finishes a 'doing' job).
        procrastinate's table does not say who finished a job, so where another execution started after
        this one (a stalled job retried while its owner was alive), the answer is unknown: the queue's
        record (observer.py, by actor) judges that completion. A server error propagates: the run asks
        again."""
        job_id, _, attempt = token.partition(":")
        if not job_id.isdigit() or not attempt.isdigit():
            return "unknown"
        rows = self.query(COMPLETION, (int(job_id), job))
        if not rows:
            return "unknown"
        status, attempts, started = rows[0]
        if status == "succeeded" and int(started) == int(attempt) == int(attempts):
            return "accepted"
        return "unknown"

    def close(self) -> None:
        try:
            if self._open:
                self.app.close()
        finally:
            if self._conn is not None:
                self._conn.close()
