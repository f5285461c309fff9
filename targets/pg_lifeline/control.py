"""pg_lifeline control side: an Oban-style jobs table (available, executing, completed, discarded).

The snapshot maps Oban's states onto the suite's: available -> pending, executing -> claimed (owner:
attempted_by), completed -> done, discarded -> dead. `executing_s` is how long the current attempt has
been running by the database clock, the age the rescuer judges it by.
"""

from chaos.backends.postgres.control import TableQueueControl


class Control(TableQueueControl):
    DDL = """
    CREATE TABLE jobs (
        id           text PRIMARY KEY,
        payload      jsonb NOT NULL,
        state        text NOT NULL DEFAULT 'available',
        attempt      integer NOT NULL DEFAULT 0,
        attempted_at timestamptz,
        attempted_by text,
        completed_at timestamptz,
        discarded_at timestamptz
    )"""
    SNAPSHOT_SQL = """
    SELECT id,
           CASE state WHEN 'available' THEN 'pending' WHEN 'executing' THEN 'claimed'
                      WHEN 'completed' THEN 'done' WHEN 'discarded' THEN 'dead' ELSE state END,
           attempted_by, attempt,
           json_build_object('queue_state', state, 'attempted_at', attempted_at,
                             'executing_s', CASE WHEN state = 'executing'
                                                 THEN round(extract(epoch FROM now() - attempted_at), 3) END)
    FROM jobs ORDER BY id"""
