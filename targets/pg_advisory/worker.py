"""pg_advisory worker: the seed's session advisory lock, as Que (Owner-Scoped Resources).

Ownership model: a job is owned by whichever database session holds `pg_try_advisory_lock(lock_key)`
for it. No row lock and no transaction is held across the work (the connection is in autocommit).
Claim: read a few pending candidates, try the advisory lock on each in turn until one succeeds, then
re-check, atomically with recording the attempt, that the row is still pending (it may have been
completed between the read and the lock; then unlock and try the next). Complete: UPDATE the row to
done, conditional on still being this attempt, then unlock. Revocation is session end: when the
worker dies its connection closes, the server ends the session and releases the lock at once.

Que's known pitfall is avoided: `pg_try_advisory_lock` is never evaluated in a WHERE clause (the
planner may call it on rows the query then does not return, leaving locks nobody knows about); each
lock is taken by its own statement, on one key, and released when the row turned out to be taken.

Failure mode (the seed's "Where No False Positives Stops"): the lock makes ownership exact but cannot
cover the gap between the external effect and the completing UPDATE. A worker killed after its effect
and before that UPDATE leaves the job pending and unlocked, and the next owner performs the effect
again: at-least-once, never exactly-once. Session locks ignore rollback and live only as long as the
session: behind a transaction-mode pooler, or after a server restart, the worker silently loses its
lock while it keeps computing. It checks its session still holds the lock before the effect and
abandons the job otherwise, and its completion is fenced by the attempt number, so a stale completion
is rejected once another worker has claimed the job.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, settings, stop_flag
from chaos.worker.postgres import TRANSIENT, Db, serve, settle

CANDIDATES_PER_POLL = 16

CANDIDATES = "SELECT id, lock_key FROM jobs WHERE status = 'pending' ORDER BY id LIMIT %(limit)s"
TRY_LOCK = "SELECT pg_try_advisory_lock(%(key)s)"
UNLOCK = "SELECT pg_advisory_unlock(%(key)s)"
# The re-check after the lock, and the attempt it records (which also fences a stale completion).
CLAIM = """
UPDATE jobs SET attempts = attempts + 1, claimed_by = %(worker)s
WHERE id = %(job)s AND status = 'pending'
RETURNING payload, attempts"""
HOLDS_LOCK = """
SELECT 1 FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
  AND ((classid::bigint << 32) | objid::bigint) = %(key)s"""
# Idempotent, so it may be retried after a connection error left its outcome unknown: 'done' with our
# attempt and our name can only be our own completion.
COMPLETE = """
UPDATE jobs SET status = 'done', finished_at = coalesce(finished_at, now())
WHERE id = %(job)s AND status IN ('pending', 'done') AND attempts = %(attempt)s AND claimed_by = %(worker)s"""
FAIL = """
UPDATE jobs SET status = CASE WHEN attempts >= %(max_attempts)s THEN 'dead' ELSE 'pending' END,
       finished_at = CASE WHEN attempts >= %(max_attempts)s THEN now() END
WHERE id = %(job)s AND status = 'pending' AND attempts = %(attempt)s AND claimed_by = %(worker)s"""


@dataclass(frozen=True)
class Claim:
    job: str
    key: int
    payload: dict[str, Any]
    attempt: int
    session: int  # the Db generation whose session holds the lock

    @property
    def args(self) -> dict[str, Any]:
        return {"job": self.job, "key": self.key, "attempt": self.attempt}


def claim(db: Db) -> Claim | None:
    _, candidates = db.run(CANDIDATES, {"limit": CANDIDATES_PER_POLL})
    for job, key in candidates:
        _, answer = db.run(TRY_LOCK, {"key": key})
        if not answer[0][0]:
            continue
        session = db.generation  # the session that now holds the lock
        _, rows = db.run(CLAIM, {"job": job})
        if not rows:  # completed or dead-lettered between our read and our lock
            db.run(UNLOCK, {"key": key})
            continue
        payload, attempt = rows[0]
        return Claim(job, key, payload, attempt, session)
    return None


def still_owned(db: Db, claim: Claim) -> bool:
    """The session that took the lock is still ours and still holds it."""
    if db.conn is None or db.conn.broken or db.generation != claim.session:
        return False
    try:
        _, rows = db.run(HOLDS_LOCK, claim.args)
    except TRANSIENT as exc:
        log(f"{claim.job}: session lost before the effect: {exc!r}")
        return False
    return bool(rows)


def release(db: Db, claim: Claim) -> None:
    """Unlock, if the lock's session is still ours (otherwise it went with that session)."""
    if db.conn is None or db.conn.broken or db.generation != claim.session:
        return
    try:
        db.run(UNLOCK, claim.args)
    except TRANSIENT as exc:
        log(f"{claim.job}: unlock failed ({exc!r}); the lock ended with its session")


def process(db: Db, claim: Claim, stop: threading.Event) -> None:
    job, token = claim.job, f"{db.cfg.worker_id}:{claim.attempt}"
    probe.claim(job, token, attempt=claim.attempt)
    try:
        run_handler(claim.payload)
    except JobFailed as exc:
        probe.abandon(job, token, reason="handler failed")  # before the unlock that frees the job
        recorded = settle(db, FAIL, dict(claim.args, max_attempts=db.cfg.max_attempts), stop)
        release(db, claim)
        log(f"{job} failed ({exc}) on attempt {claim.attempt}; requeued or dead-lettered: {recorded}")
        return
    if not still_owned(db, claim):
        release(db, claim)
        probe.abandon(job, token)
        log(f"{job}: advisory lock lost with its session, abandoned before the effect")
        return
    probe.effect(job, token, fence=claim.attempt)
    ok = settle(db, COMPLETE, claim.args, stop)
    release(db, claim)
    probe.ack(job, token, ok)


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db = Db(cfg)
    log(f"started with {cfg.params}")
    # A failed claim needs no cleanup: any lock taken on the way ended with the session.
    serve(stop, lambda: claim(db), lambda claimed: process(db, claimed, stop))
    db.reset()


if __name__ == "__main__":
    main()
