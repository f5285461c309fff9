"""pg_naive worker: the seed's dispatcher that commits a `running` marker before doing the work.

After COMMIT the row lock is gone but the durable running state remains, and nothing ever returns
it to pending: a worker that dies after claiming leaves its job stuck forever. A handler that fails
gives its job up and puts it back pending (retried without bound: the contract sets no max_attempts).
"""

from __future__ import annotations

import threading
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, settings, stop_flag
from chaos.worker.postgres import Db, serve, settle

CLAIM = """
UPDATE jobs SET state = 'running', claimed_by = %(worker)s, claimed_at = now()
WHERE id = (SELECT id FROM jobs WHERE state = 'pending' ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id, payload"""
COMPLETE = "UPDATE jobs SET state = 'done' WHERE id = %(job)s"
RETRY = "UPDATE jobs SET state = 'pending', claimed_by = NULL WHERE id = %(job)s"


def claim(db: Db) -> tuple[str, dict[str, Any]] | None:
    _, rows = db.run(CLAIM, {})
    return rows[0] if rows else None


def process(db: Db, job: str, payload: dict[str, Any], stop: threading.Event) -> None:
    token = db.cfg.worker_id
    probe.claim(job, token)
    try:
        run_handler(payload)
    except JobFailed as exc:
        probe.abandon(job, token, reason="handler failed")  # before the update that frees the job
        log(f"{job} failed ({exc}); put back pending: {settle(db, RETRY, {'job': job}, stop)}")
        return
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
