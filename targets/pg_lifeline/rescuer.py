"""pg_lifeline rescuer: the separate, purely age-based reconciler, as Oban's Lifeline plugin.

Every `rescue_interval_s` it returns every executing job whose attempt started more than
`rescue_after_s` ago (by the database clock) to available, or discards it when it has used all of
`max_attempts` (as Lifeline does), and logs each rescue to stderr.

It sees only the age of the executing marker: it cannot tell a dead owner from a slow one (the seed's
"Durable Reconciliation Is Still Time-Based"). A job whose handler runs longer than rescue_after_s is
rescued while its owner is alive, and executes twice.
"""

from __future__ import annotations

from typing import Any

import psycopg

from chaos.worker import log, settings, stop_flag
from chaos.worker.postgres import dsn

TRANSIENT = (psycopg.OperationalError,)

RESCUE = """
UPDATE jobs SET state = CASE WHEN attempt >= %(max_attempts)s THEN 'discarded' ELSE 'available' END,
       discarded_at = CASE WHEN attempt >= %(max_attempts)s THEN now() END
WHERE state = 'executing' AND attempted_at < now() - make_interval(secs => %(rescue_after_s)s)
RETURNING id, state, attempted_by, attempt, round(extract(epoch FROM now() - attempted_at), 3)"""


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    args = {"rescue_after_s": cfg.param("rescue_after_s"), "max_attempts": cfg.max_attempts}
    interval = cfg.param("rescue_interval_s")
    conn: psycopg.Connection[Any] | None = None
    log(f"rescuer started: rescue executing jobs older than {args['rescue_after_s']}s every {interval}s")
    while not stop.wait(interval):
        try:
            if conn is None or conn.closed or conn.broken:
                conn = psycopg.connect(dsn(), autocommit=True, connect_timeout=3, application_name=cfg.worker_id)
            rescued = conn.execute(RESCUE, args).fetchall()
        except TRANSIENT as exc:
            log(f"rescue scan failed: {exc!r}")
            if conn is not None:
                conn.close()
            conn = None
            continue
        for job, state, owner, attempt, age in rescued:
            log(f"rescued {job}: executing for {age}s by {owner} (attempt {attempt}), now {state}")
    if conn is not None:
        conn.close()
    log("rescuer stopping")


if __name__ == "__main__":
    main()
