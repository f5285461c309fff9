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

import psycopg

from chaos import probe
from chaos.worker import POLL_S, JobFailed, WorkerSettings, log, retrying, run_handler, settings, stop_flag

TRANSIENT = (psycopg.OperationalError,)

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


class Db:
    """One autocommit connection that reconnects after the server restarted under it."""

    def __init__(self, cfg: WorkerSettings) -> None:
        self.cfg = cfg
        self.conn: psycopg.Connection[Any] | None = None

    def run(self, sql: str, args: dict[str, Any]) -> tuple[int, list[tuple[Any, ...]]]:
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.reset()
            self.conn = psycopg.connect(self.cfg.dsn, autocommit=True, connect_timeout=3,
                                        application_name=self.cfg.worker_id)
        try:
            cursor = self.conn.execute(sql, dict(args, worker=self.cfg.worker_id))
            return cursor.rowcount, cursor.fetchall() if cursor.description else []
        except TRANSIENT:
            self.reset()
            raise

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def settle(db: Db, sql: str, args: dict[str, Any], stop: threading.Event) -> bool:
    """Run a completing statement through transient errors; true when it changed the row."""
    try:
        rows, _ = retrying(lambda: db.run(sql, args), TRANSIENT, stop, timeout=10.0)
    except TRANSIENT as exc:
        log(f"{args['job']}: could not reach the queue to settle it ({exc!r}); left to the rescuer")
        return False
    return rows == 1


def process(db: Db, job: str, payload: dict[str, Any], attempt: int, stop: threading.Event) -> None:
    token = f"{db.cfg.worker_id}:{attempt}"
    args = {"job": job, "attempt": attempt}
    probe.send("claim", job, token=token, attempt=attempt)
    try:
        run_handler(payload)
    except JobFailed as exc:
        max_attempts = int(db.cfg.contract.get("max_attempts") or 1)
        recorded = settle(db, FAIL, dict(args, max_attempts=max_attempts), stop)
        probe.ack(job, token, False)
        log(f"{job} failed ({exc}) on attempt {attempt}; made available again or discarded: {recorded}")
        return
    probe.effect(job, token)
    probe.ack(job, token, settle(db, COMPLETE, args, stop))


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db = Db(cfg)
    log(f"started with {cfg.params}")
    while not stop.is_set():
        try:
            _, rows = db.run(CLAIM, {})
        except TRANSIENT as exc:
            log(f"claim failed: {exc!r}")  # if it committed, the rescuer returns the job
            stop.wait(0.2)
            continue
        if not rows:
            stop.wait(POLL_S)
            continue
        job, payload, attempt = rows[0]
        process(db, job, payload, attempt, stop)
    db.reset()
    log("stopping")


if __name__ == "__main__":
    main()
