"""Control side shared by table-backed PostgreSQL targets: schema, enqueue, each worker's connection
settings, and the final snapshot.

A target subclasses it with its DDL and a query mapping its rows to the suite's states
(pending, claimed, done, dead). It runs in the suite's process, connected straight to the backend.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from chaos import events
from chaos.backends.base import Endpoint
from chaos.backends.postgres.base import PostgresBackend
from chaos.contract import Contract
from chaos.queue_model import Job, JobState, KeepsNoCompletions


class TableQueueControl(KeepsNoCompletions):
    """Subclass it with DDL (the queue's tables, made at setup), SNAPSHOT_SQL (every job as rows of (id,
    state, owner, attempts, a JSON-able detail dict or None), state one of pending, claimed, done, dead)
    and, for a jobs table that is not `jobs(id text, payload jsonb)`, ENQUEUE_SQL (an INSERT taking the
    suite's job id and its JSON payload, in that order)."""

    DDL = ""
    SNAPSHOT_SQL = ""
    ENQUEUE_SQL = "INSERT INTO jobs (id, payload) VALUES (%s, %s)"
    shows_deliveries = True  # a claimed row shows its owner

    def __init__(self, backend: PostgresBackend, params: dict[str, Any], contract: Contract) -> None:
        self.dsn = backend.dsn
        self.params = params
        self.contract = contract
        self._conn: psycopg.Connection[Any] | None = None

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
        self.execute(self.DDL)

    def enqueue(self, jobs: list[Job]) -> None:
        with self.connection().cursor() as cursor:
            cursor.executemany(self.ENQUEUE_SQL, [(job.id, json.dumps(job.payload())) for job in jobs])

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """A worker connects through its own endpoint (its URL carries database, user and schema)."""
        return {events.ENV_POSTGRES_DSN: endpoint.url}

    def snapshot(self) -> list[JobState]:
        return [JobState(job, state, owner, attempts, dict(detail or {}))
                for job, state, owner, attempts, detail in self.execute(self.SNAPSHOT_SQL)]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
