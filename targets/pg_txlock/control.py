"""pg_txlock control side: a jobs table whose only ownership record is a row lock.

Nothing durable says "claimed": a pending row is claimed exactly while some other session's open
transaction holds its row lock. Row locks live in the tuple header (xmax), not in pg_locks, so pg_locks
alone cannot list them. The snapshot therefore asks the lock manager the same question a worker asks:
inside a transaction that is always rolled back, `FOR KEY SHARE SKIP LOCKED` over the pending rows
returns the unlocked ones, and a pending row it skipped is claimed. FOR KEY SHARE is the weakest row
lock that still conflicts with the workers' FOR UPDATE, so the probe never blocks a worker's UPDATE.
The owner is named through the row's xmax: the locking transaction's own transactionid lock in pg_locks
gives its backend, whose application_name is the worker's id.
"""

from __future__ import annotations

import psycopg

from chaos import JobState
from chaos.backends.postgres.control import TableQueueControl


class Control(TableQueueControl):
    DDL = """
    CREATE TABLE jobs (
        id          text PRIMARY KEY,
        payload     jsonb NOT NULL,
        status      text NOT NULL DEFAULT 'pending',
        attempts    integer NOT NULL DEFAULT 0,
        finished_by text,
        finished_at timestamptz
    )"""
    SNAPSHOT_SQL = """
    WITH unlocked AS MATERIALIZED (
             SELECT id FROM jobs WHERE status = 'pending' FOR KEY SHARE SKIP LOCKED),
         holders AS MATERIALIZED (
             SELECT l.transactionid AS xid, a.application_name
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
               AND l.pid <> pg_backend_pid())
    SELECT j.id,
           CASE WHEN j.status = 'pending' AND u.id IS NULL THEN 'claimed' ELSE j.status END,
           CASE WHEN j.status = 'pending' AND u.id IS NULL THEN h.application_name ELSE j.finished_by END,
           j.attempts,
           json_build_object('row_locked', j.status = 'pending' AND u.id IS NULL,
                             'finished_at', j.finished_at)
    FROM jobs j
    LEFT JOIN unlocked u ON u.id = j.id
    LEFT JOIN holders h ON h.xid = j.xmax
    ORDER BY j.id"""

    def snapshot(self) -> list[JobState]:
        """Run the snapshot in a transaction that is rolled back, so its probing row locks never stick."""
        conn = self.connection()
        try:
            with conn.transaction(force_rollback=True):
                rows = conn.execute(self.SNAPSHOT_SQL).fetchall()
        except psycopg.OperationalError:
            conn.close()
            raise
        return [JobState(job, state, owner, attempts, dict(detail or {}))
                for job, state, owner, attempts, detail in rows]
