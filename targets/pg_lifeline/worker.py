"""pg_lifeline worker: a durable running marker recovered by a separate age-based rescuer, as Oban's
Lifeline (the seed's "Durable Reconciliation Is Still Time-Based").

Ownership model: a durable per-owner in-progress record. The claim commits, in one transaction
(`FOR UPDATE SKIP LOCKED` on an available row), state = 'executing' with attempted_at = now(),
attempted_by = this worker and attempt + 1; the row lock ends at that COMMIT, and from then on the
executing row is the only record of ownership. Completion is conditional on still being that
attempt (state = 'executing', attempted_by = me, attempt = mine), so a stale completion is rejected.
Revocation belongs to a separate process, the rescuer (rescuer.py), which returns executing jobs
older than `rescue_after_s` to available.

Failure mode: the marker never goes stale by itself, and the rescuer's only liveness signal is age.
A worker killed after claiming leaves its job executing until the rescue age passes (recovery is
bounded by rescue_after_s plus a scan interval, not by the death). And the rescuer cannot tell a dead
owner from a slow one: a job running longer than rescue_after_s is rescued while its owner is alive,
another worker executes it at the same time, and the effect happens twice. The worker itself never
learns it was rescued before its effect; only its completion is then rejected.
"""

from __future__ import annotations

import threading
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, settings, stop_flag
from chaos.worker.postgres import Db, serve, settle

CLAIM = """
UPDATE jobs SET state = 'executing', attempted_at = now(), attempted_by = %(worker)s, attempt = attempt + 1
WHERE id = (SELECT id FROM jobs WHERE state = 'available' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id, payload, attempt"""
# Idempotent, so it may be retried after a connection error left its outcome unknown: 'completed'
# with our name and our attempt can only be our own completion.
COMPLETE = """
UPDATE jobs SET state = 'completed', completed_at = coalesce(completed_at, now())
WHERE id = %(job)s AND state IN ('executing', 'completed') AND attempted_by = %(worker)s AND attempt = %(attempt)s"""
FAIL = """
UPDATE jobs SET state = CASE WHEN attempt >= %(max_attempts)s THEN 'discarded' ELSE 'available' END,
       discarded_at = CASE WHEN attempt >= %(max_attempts)s THEN now() END
WHERE id = %(job)s AND state = 'executing' AND attempted_by = %(worker)s AND attempt = %(attempt)s"""


def process(db: Db, job: str, payload: dict[str, Any], attempt: int, stop: threading.Event) -> None:
    token = f"{db.cfg.worker_id}:{attempt}"
    args = {"job": job, "attempt": attempt}
    probe.claim(job, token, attempt=attempt)
    try:
        run_handler(payload)
    except JobFailed as exc:
        max_attempts = db.cfg.max_attempts
        probe.abandon(job, token, reason="handler failed")  # before the update that frees the job
        recorded = settle(db, FAIL, dict(args, max_attempts=max_attempts), stop)
        log(f"{job} failed ({exc}) on attempt {attempt}; made available again or discarded: {recorded}")
        return
    probe.effect(job, token)
    probe.ack(job, token, settle(db, COMPLETE, args, stop))


def claim(db: Db) -> tuple[str, dict[str, Any], int] | None:
    _, rows = db.run(CLAIM, {})  # if it committed but the answer was lost, the rescuer returns the job
    return rows[0] if rows else None


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db = Db(cfg)
    log(f"started with {cfg.params}")
    serve(stop, lambda: claim(db), lambda claimed: process(db, *claimed, stop))
    db.reset()


if __name__ == "__main__":
    main()
