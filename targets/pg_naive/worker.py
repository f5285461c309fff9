"""pg_naive worker: the seed's dispatcher that commits a `running` marker before doing the work.

After COMMIT the row lock is gone but the durable running state remains, and nothing ever returns
it to pending: a worker that dies after claiming leaves its job stuck forever.
"""

from __future__ import annotations

from typing import Any

import psycopg

from chaos import probe
from chaos.worker import POLL_S, log, retrying, run_handler, settings, stop_flag

TRANSIENT = (psycopg.OperationalError,)


def claim(conn: psycopg.Connection[Any], worker: str) -> tuple[str, dict[str, Any]] | None:
    with conn.transaction():
        row = conn.execute("SELECT id, payload FROM jobs WHERE state = 'pending' ORDER BY created_at, id "
                           "FOR UPDATE SKIP LOCKED LIMIT 1").fetchone()
        if row is None:
            return None
        conn.execute("UPDATE jobs SET state = 'running', claimed_by = %s, claimed_at = now() WHERE id = %s",
                     (worker, row[0]))
    return row[0], row[1]


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    conn = psycopg.connect(cfg.dsn, autocommit=True)
    log("started")
    while not stop.is_set():
        claimed = claim(conn, cfg.worker_id)
        if claimed is None:
            stop.wait(POLL_S)
            continue
        job, payload = claimed
        probe.claim(job, token=cfg.worker_id)
        run_handler(payload)
        probe.effect(job, cfg.worker_id)
        rows = retrying(lambda job=job: conn.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,)).rowcount,
                        TRANSIENT, stop)
        probe.ack(job, cfg.worker_id, rows == 1)
    log("stopping")


if __name__ == "__main__":
    main()
