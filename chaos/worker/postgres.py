"""Worker-side PostgreSQL plumbing shared by the reference targets: a connection that survives a
server restart under it, completing statements retried through transient errors, and the polling
loop every worker runs. Each target keeps only what differs: its ownership model.

The connection settings are the ones the target's control handed this worker (`CHAOS_POSTGRES_DSN`,
built from the worker's own endpoint). Python 3.8 syntax, like the rest of `chaos.worker`."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from chaos import events
from chaos.worker.settings import WorkerSettings, serve_jobs, settled

TRANSIENT = (psycopg.OperationalError,)
T = TypeVar("T")


def dsn() -> str:
    """This worker's connection settings, as its target's control built them from its endpoint."""
    return os.environ.get(events.ENV_POSTGRES_DSN, "")


class Db:
    """One connection, reopened after the server restarted under it. `generation` counts sessions, so
    whatever a session owned (a lock, an open transaction) is known lost once it changes."""

    def __init__(self, cfg: WorkerSettings, autocommit: bool = True) -> None:
        self.cfg = cfg
        self.dsn = dsn()
        self.autocommit = autocommit
        self.conn: psycopg.Connection[Any] | None = None
        self.generation = 0

    def connection(self) -> psycopg.Connection[Any]:
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.reset()
            self.conn = psycopg.connect(self.dsn, autocommit=self.autocommit, connect_timeout=3,
                                        application_name=self.cfg.worker_id)
            self.generation += 1
        return self.conn

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def run(self, sql: str, args: dict[str, Any]) -> tuple[int, list[tuple[Any, ...]]]:
        """Execute with `worker` bound to this worker's id; returns (rows affected, rows returned)."""
        try:
            cursor = self.connection().execute(sql, dict(args, worker=self.cfg.worker_id))
            return cursor.rowcount, cursor.fetchall() if cursor.description else []
        except TRANSIENT:
            self.reset()
            raise


def settle(db: Db, sql: str, args: dict[str, Any], stop: threading.Event) -> bool:
    """Run a completing statement through transient errors; true when it changed exactly one row (false
    also when the queue stayed unreachable)."""
    done = settled(lambda: db.run(sql, args), TRANSIENT, stop, str(args.get("job")))
    return done is not None and done[0] == 1


def serve(stop: threading.Event, claim: Callable[[], T | None], process: Callable[[T], None],
          on_error: Callable[[], None] | None = None) -> None:
    """Claim and process jobs until SIGTERM, through PostgreSQL's transient errors."""
    serve_jobs(stop, claim, process, TRANSIENT, on_error)


__all__ = ["TRANSIENT", "Db", "dsn", "serve", "settle"]
