"""pg_lease control side: the jobs table of the visibility-timeout seed."""

from chaos import TableQueueControl


class Control(TableQueueControl):
    DDL = """
    CREATE TABLE jobs (
        id               text PRIMARY KEY,
        payload          jsonb NOT NULL,
        status           text NOT NULL DEFAULT 'pending',
        available_at     timestamptz NOT NULL DEFAULT now(),
        lease_expires_at timestamptz,
        claim_token      text,
        claimed_by       text,
        attempts         integer NOT NULL DEFAULT 0
    )"""
    SNAPSHOT_SQL = """
    SELECT id, status, claimed_by, attempts,
           json_build_object('lease_expired', lease_expires_at < now(), 'claim_token', claim_token)
    FROM jobs ORDER BY id"""
