"""The queue's own record on PostgreSQL: a trigger on the library's job table writes every ownership change
(claim, completion, release, failure; by an UPDATE, or by a DELETE for a library that removes a finished
job's row) into a record table, with the transaction's actor (its session's
application_name: the worker's name, which chaos.worker.postgres connections carry) and the server's
clock; the observer reads it back in order.

For one job, the record's order is its commit order: the row lock makes a second transaction that
changes the row wait for the first to commit before its trigger runs.
"""

from __future__ import annotations

from typing import Any

import psycopg

from chaos.backends.postgres.base import PostgresBackend
from chaos.contract import Contract
from chaos.queue_model import QueueRecord

RECORD_DDL = """
CREATE TABLE chaos_queue_record (
    seq   bigserial PRIMARY KEY,
    at    double precision NOT NULL DEFAULT extract(epoch FROM clock_timestamp()),
    job   text NOT NULL,
    kind  text NOT NULL,
    actor text,
    token text
);
CREATE FUNCTION chaos_queue_record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job text;
    v_change text;
    v_token text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        v_job := OLD.{id}; v_change := ({delete_kind}); v_token := ({delete_token})::text;
    ELSE
        v_job := NEW.{id}; v_change := ({kind}); v_token := ({token})::text;
    END IF;
    IF v_change IS NOT NULL THEN
        INSERT INTO chaos_queue_record (job, kind, actor, token)
        VALUES (v_job, v_change, nullif(current_setting('application_name'), ''), v_token);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER chaos_queue_record AFTER UPDATE OR DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION chaos_queue_record();
"""
READ = "SELECT seq, at, job, kind, actor, token FROM chaos_queue_record WHERE seq > %s ORDER BY seq"


class TriggerObserver:
    """Subclass it with the job table's TABLE and ID column, and KIND: a SQL expression over OLD and NEW
    naming the change an UPDATE made ('claim', 'complete', 'release', 'fail', or NULL for none), and TOKEN:
    the claim token the change concerns (NULL where the table keeps none). A library that removes a row
    to finish a job (a completion, or a failure moved to another table) says so in DELETE_KIND, a SQL
    expression over OLD (NULL: a delete records nothing), with DELETE_TOKEN."""

    covers = frozenset({"claim", "complete", "release", "fail"})  # every UPDATE of the table passes the trigger
    TABLE = "jobs"
    ID = "id"
    KIND = "NULL"
    TOKEN = "NULL"
    DELETE_KIND = "NULL"
    DELETE_TOKEN = "NULL"

    def __init__(self, backend: PostgresBackend, params: dict[str, Any], contract: Contract) -> None:
        self.dsn = backend.dsn
        self._conn: psycopg.Connection[Any] | None = None
        # A row's seq is taken when its trigger runs, not when its transaction commits: a lower seq may
        # become visible after a higher one was read. So every row above the highest seq below which all
        # were seen is read again, and only the unseen are returned.
        self._floor = 0
        self._seen: set[int] = set()

    def _connection(self) -> psycopg.Connection[Any]:
        """One autocommit connection, reopened after the backend restarted under it."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5,
                                         application_name="chaos-observer")
        return self._conn

    def install(self) -> None:
        ddl = RECORD_DDL
        for name, value in (("{delete_kind}", self.DELETE_KIND), ("{delete_token}", self.DELETE_TOKEN),
                            ("{kind}", self.KIND), ("{token}", self.TOKEN), ("{id}", self.ID), ("{table}", self.TABLE)):
            ddl = ddl.replace(name, value)
        self._connection().execute(ddl.encode())

    def read(self) -> list[QueueRecord]:
        try:
            rows = self._connection().execute(READ, (self._floor,)).fetchall()
        except psycopg.OperationalError:
            if self._conn is not None:
                self._conn.close()
            raise
        fresh = [row for row in rows if row[0] not in self._seen]
        self._seen.update(row[0] for row in fresh)
        while self._floor + 1 in self._seen:
            self._seen.discard(self._floor + 1)
            self._floor += 1
        return [QueueRecord(kind, job, actor, at, seq, token) for seq, at, job, kind, actor, token in fresh]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
