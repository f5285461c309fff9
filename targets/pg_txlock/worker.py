"""pg_txlock worker: the seed's "row lock held in a transaction for the whole job" (Owner-Scoped Resources).

Ownership model: the row lock that `SELECT ... FOR UPDATE SKIP LOCKED` takes, held by one open
transaction from the claim through the handler, the effect and the `UPDATE status = 'done'` to COMMIT.
Nothing durable is written at claim time, so there is no marker to orphan. Revocation is transaction
end: when the worker dies its socket closes, the server ends the session, rolls the transaction back
and the lock is released, so the job is pending and unlocked again for the next worker.

Failure mode (the seed's "Where No False Positives Stops"): the lock makes ownership exact, but it
cannot cover the gap between the external effect and the COMMIT. A worker killed after its effect and
before its commit leaves the job pending, and the next owner performs the effect again: at-least-once,
never exactly-once. A lost connection (server restart) ends ownership just the same while the old
worker may still be computing; it checks its transaction is still alive before the effect and
abandons the job otherwise. Two more properties of this model: a transaction stays open for the whole
job, and an attempt that crashed its worker rolls back its own attempt count (only handler failures
are counted, under a savepoint, while the lock is still held).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, retrying, run_handler, settings, stop_flag
from chaos.worker.postgres import TRANSIENT, Db, serve

CLAIMS = itertools.count(1)

CLAIM = """
SELECT id, payload, attempts + 1, txid_current() FROM jobs
WHERE status = 'pending' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1"""
STILL_OWNED = "SELECT 1 FROM jobs WHERE id = %(job)s AND status = 'pending'"
COMPLETE = """
UPDATE jobs SET status = 'done', attempts = attempts + 1, finished_by = %(worker)s, finished_at = now()
WHERE id = %(job)s AND status = 'pending'"""
FAIL = """
UPDATE jobs SET attempts = attempts + 1, finished_by = %(worker)s, finished_at = now(),
       status = CASE WHEN attempts + 1 >= %(max_attempts)s THEN 'dead' ELSE 'pending' END
WHERE id = %(job)s AND status = 'pending'"""
# After an ambiguous COMMIT (the connection died during it): did our completion land?
COMMITTED = """
SELECT 1 FROM jobs WHERE id = %(job)s AND status = 'done' AND finished_by = %(worker)s AND attempts = %(attempt)s"""


def claim(db: Db) -> tuple[str, dict[str, Any], int, str] | None:
    """BEGIN and lock the first unlocked pending row; the transaction stays open when one is found."""
    conn = db.connection()
    row = conn.execute(CLAIM).fetchone()
    if row is None:
        conn.rollback()
        return None
    conn.execute("SAVEPOINT job")
    job, payload, attempt, xid = row
    # The xid names the owning transaction; the worker's own claim count keeps the token unique even
    # when a crash-restarted server hands out an xid again.
    return job, payload, attempt, f"{db.cfg.worker_id}:{next(CLAIMS)}:{xid}"


def still_owned(db: Db, job: str) -> bool:
    """Our transaction (and so our lock) is still alive: a statement inside it still runs."""
    conn = db.conn
    if conn is None or conn.broken:
        return False
    try:
        return conn.execute(STILL_OWNED, {"job": job}).fetchone() is not None
    except TRANSIENT as exc:
        log(f"{job}: transaction lost before the effect: {exc!r}")
        db.reset()
        return False


def complete(db: Db, job: str, attempt: int, stop: threading.Event) -> bool:
    """UPDATE and COMMIT; true only when the completion is known to have committed."""
    args = {"job": job, "worker": db.cfg.worker_id, "attempt": attempt}
    try:
        conn = db.connection()
        rows = conn.execute(COMPLETE, args).rowcount
        conn.commit()
        return rows == 1
    except TRANSIENT as exc:
        log(f"{job}: completion failed or is unknown ({exc!r}); checking after reconnecting")
        db.reset()

    def landed() -> bool:
        try:
            return db.connection().execute(COMMITTED, args).fetchone() is not None
        finally:
            if db.conn is not None and not db.conn.broken:
                db.conn.rollback()
            else:
                db.reset()

    try:
        return retrying(landed, TRANSIENT, stop, timeout=10.0)
    except TRANSIENT:
        return False


def fail(db: Db, job: str, error: JobFailed) -> None:
    """Undo the handler's own writes (the savepoint) but keep the lock while the failure is recorded."""
    max_attempts = db.cfg.max_attempts
    try:
        conn = db.connection()
        conn.execute("ROLLBACK TO SAVEPOINT job")
        rows = conn.execute(FAIL, {"job": job, "worker": db.cfg.worker_id, "max_attempts": max_attempts}).rowcount
        conn.commit()
        log(f"{job} failed ({error}); failure recorded: {rows == 1}")
    except TRANSIENT as exc:
        log(f"{job} failed ({error}) and its failure was not recorded ({exc!r}); the job stays pending")
        db.reset()


def process(db: Db, job: str, payload: dict[str, Any], attempt: int, token: str, stop: threading.Event) -> None:
    probe.claim(job, token, attempt=attempt)
    try:
        run_handler(payload)
    except JobFailed as exc:
        probe.abandon(job, token, reason="handler failed")  # before the commit that frees the job
        fail(db, job, exc)
        return
    if not still_owned(db, job):
        probe.abandon(job, token)
        return
    probe.effect(job, token)
    probe.ack(job, token, complete(db, job, attempt, stop))


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db = Db(cfg, autocommit=False)  # a job's whole life is one of its transactions
    log(f"started with {cfg.params}")
    serve(stop, lambda: claim(db), lambda claimed: process(db, *claimed, stop), on_error=db.reset)
    db.reset()


if __name__ == "__main__":
    main()
