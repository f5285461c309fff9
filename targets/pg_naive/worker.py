"""pg_naive worker: the seed's dispatcher that commits a `running` marker before doing the work.

After COMMIT the row lock is gone but the durable running state remains, and nothing ever returns
it to pending: a worker that dies after claiming leaves its job stuck forever.
"""

from __future__ import annotations

import threading
from typing import Any

from chaos import probe
from chaos.worker import log, run_handler, settings, stop_flag
from chaos.worker.postgres import Db, serve, settle

CLAIM = """
UPDATE jobs SET state = 'running', claimed_by = %(worker)s, claimed_at = now()
WHERE id = (SELECT id FROM jobs WHERE state = 'pending' ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id, payload"""
COMPLETE = "UPDATE jobs SET state = 'done' WHERE id = %(job)s"


def claim(db: Db) -> tuple[str, dict[str, Any]] | None:
    _, rows = db.run(CLAIM, {})
    return rows[0] if rows else None


def process(db: Db, job: str, payload: dict[str, Any], stop: threading.Event) -> None:
    token = db.cfg.worker_id
    probe.claim(job, token)
    run_handler(payload)
    probe.effect(job, token)
    probe.ack(job, token, settle(db, COMPLETE, {"job": job}, stop))


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db = Db(cfg)
    log("started")
    serve(stop, lambda: claim(db), lambda claimed: process(db, *claimed, stop))
    db.reset()


if __name__ == "__main__":
    main()
