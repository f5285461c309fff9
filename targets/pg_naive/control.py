"""pg_naive control side: the dispatcher table of the orphaned-claim seed."""

from chaos.backends.postgres.control import TableQueueControl


class Control(TableQueueControl):
    DDL = """
    CREATE TABLE jobs (
        id         text PRIMARY KEY,
        payload    jsonb NOT NULL,
        state      text NOT NULL DEFAULT 'pending',
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        claimed_by text,
        claimed_at timestamptz
    )"""
    SNAPSHOT_SQL = """
    SELECT id, CASE state WHEN 'running' THEN 'claimed' ELSE state END, claimed_by, NULL::int,
           json_build_object('claimed_at', claimed_at)
    FROM jobs ORDER BY id"""
