"""pgqueuer_pg control side: pgqueuer's schema, its producer, and its own tables read back.

- `setup()` installs pgqueuer's schema with pgqueuer's own installer (`Queries.install()`, what `pgq install`
  runs) in the run's database (on an external server the DSN puts the run's schema first on the search_path,
  and pgqueuer's unqualified names land there).
- `enqueue()` uses pgqueuer's producer, `SyncQueries(SyncPsycopgDriver(conn)).enqueue(...)` (docs/reference/
  drivers.md), with the suite's job id as the job's `dedupe_key` (a documented column, unique among queued and
  picked jobs) and in the JSON payload. pgqueuer returns its own ids, kept here: its log is keyed by them.
- `snapshot()` reads pgqueuer's tables: a row of `pgqueuer` is pending (`queued`), claimed (`picked`) or dead
  (`failed`, held after its last attempt); a job with no row whose latest line in `pgqueuer_log` is `successful`
  is done. The owner of a picked row is the worker whose pick of it (its queue_manager_id) the observer's
  record names; pgqueuer itself keeps only the uuid.
- `completion(job, token)` answers from pgqueuer_log: accepted where the job's log shows a `successful` line and
  the job was picked exactly once (then that one execution's completion is the one pgqueuer took). pgqueuer's log
  does not say which execution completed a job picked more than once: unknown (the observer's record, which
  names the deleting session, judges those).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import psycopg
from pgqueuer import Queries
from pgqueuer.db import SyncPsycopgDriver
from pgqueuer.queries import SyncQueries

from chaos import Backend, Contract, Endpoint, Job, JobState

ENTRYPOINT = "chaos_job"  # worker.py's entrypoint
STATES = {"queued": "pending", "picked": "claimed", "failed": "dead"}


async def install(dsn: str) -> None:
    connection = await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=5)
    try:
        await Queries.from_psycopg_connection(connection).install()
    finally:
        await connection.close()


class Control:
    shows_deliveries: ClassVar[bool] = True  # a picked row stays in pgqueuer's table until it is completed

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.dsn: str = backend.dsn  # type: ignore[attr-defined]
        self._conn: psycopg.Connection[Any] | None = None
        self.ids: dict[int, str] = {}  # pgqueuer's job id -> the suite's job id

    def connection(self) -> psycopg.Connection[Any]:
        """One autocommit connection, reopened after the backend restarted under it."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
        return self._conn

    def execute(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        try:
            cursor = self.connection().execute(sql, args)
            return cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError:
            if self._conn is not None:
                self._conn.close()
            raise

    def setup(self) -> None:
        asyncio.run(install(self.dsn))

    def enqueue(self, jobs: list[Job]) -> None:
        if not jobs:
            return
        queries = SyncQueries(SyncPsycopgDriver(self.connection()))
        ids = queries.enqueue([ENTRYPOINT] * len(jobs),
                              [json.dumps({"job": job.id, "payload": job.payload()}).encode() for job in jobs],
                              [0] * len(jobs), dedupe_key=[job.id for job in jobs])
        for pid, job in zip(ids, jobs, strict=True):
            self.ids[int(pid)] = job.id

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"CHAOS_POSTGRES_DSN": endpoint.url}

    def _owners(self) -> dict[str, str]:
        """queue_manager_id -> the worker whose session picked with it, from the observer's record."""
        try:
            rows = self.execute("SELECT DISTINCT split_part(token, ':', 2), actor FROM chaos_queue_record "
                                "WHERE kind = 'claim' AND actor IS NOT NULL")
        except psycopg.errors.UndefinedTable:
            return {}
        return {qm: actor for qm, actor in rows}

    def snapshot(self) -> list[JobState]:
        found: dict[str, JobState] = {}
        log = self.execute("SELECT DISTINCT ON (job_id) job_id, status::text FROM pgqueuer_log "
                           "ORDER BY job_id, id DESC")
        for pid, status in log:
            job = self.ids.get(int(pid))
            if job is not None and status == "successful":
                found[job] = JobState(job, "done", detail={"pgqueuer_id": int(pid)})
        owners: dict[str, str] = {}
        rows = self.execute("SELECT id, dedupe_key, status::text, queue_manager_id::text, attempts FROM pgqueuer "
                            "WHERE entrypoint = %s", (ENTRYPOINT,))
        if any(status == "picked" for _, _, status, _, _ in rows):
            owners = self._owners()
        for pid, job, status, qm, attempts in rows:
            if job is None or status not in STATES:
                continue
            owner = owners.get(qm) if status == "picked" and qm else None
            found[job] = JobState(job, STATES[status], owner=owner, attempts=int(attempts) + 1,
                                  detail={"pgqueuer_id": int(pid), "queue_manager_id": qm})
        return sorted(found.values(), key=lambda state: state.job)

    def completion(self, job: str, token: str) -> str:
        pid = int(token.split(":", 1)[0])
        if self.ids.get(pid) != job:
            return "unknown"
        statuses = [status for (status,) in self.execute(
            "SELECT status::text FROM pgqueuer_log WHERE job_id = %s ORDER BY id", (pid,))]
        if statuses.count("picked") == 1 and "successful" in statuses:
            return "accepted"
        return "unknown"

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
