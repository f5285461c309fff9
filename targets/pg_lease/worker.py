"""pg_lease worker: the visibility-timeout seed, with its broken variants behind parameters.

Correct (the defaults): the claim predicate includes `lease_expires_at`, FOR UPDATE SKIP LOCKED, a
random claim token, a heartbeat thread that extends only while `claim_token` and status still match
(RowsAffected() == 1), a watchdog that stops the handler when an extension fails, a conditional ack,
attempts counted against max_attempts, and every timestamp from the database's clock. Each parameter
breaks one of those rules (target.toml lists them).
"""

from __future__ import annotations

import datetime
import threading
import uuid
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, WorkerSettings, log, pause, retrying, run_handler, settings, stop_flag
from chaos.worker.postgres import TRANSIENT, Db, serve

CLAIMABLE = """
SELECT id FROM jobs
WHERE (status = 'pending' AND available_at <= {now})
   OR (status = 'claimed' AND lease_expires_at < {now} + make_interval(secs => %(early)s))
ORDER BY id"""
TAKE = """
UPDATE jobs SET status = 'claimed', claim_token = %(token)s, claimed_by = %(worker)s,
       lease_expires_at = {now} + make_interval(secs => %(lease)s), attempts = attempts + 1
WHERE id = {which}
RETURNING id, payload, attempts"""
CLAIM = TAKE.format(which="(" + CLAIMABLE + " FOR UPDATE SKIP LOCKED LIMIT 1)", now="{now}")
RACY_WINDOW_S = 0.05  # the racy claim's gap between reading a claimable id and taking it
EXTEND = {
    "token": "UPDATE jobs SET lease_expires_at = {now} + make_interval(secs => %(lease)s) "
             "WHERE id = %(job)s AND claim_token = %(token)s AND status = 'claimed'",
    "any": "UPDATE jobs SET lease_expires_at = {now} + make_interval(secs => %(lease)s) "
           "WHERE id = %(job)s AND status = 'claimed'",
}
STILL_OWNED = """
SELECT 1 FROM jobs WHERE id = %(job)s AND claim_token = %(token)s AND status = 'claimed'
                     AND lease_expires_at > {now}"""
ACK = {
    "conditional": "UPDATE jobs SET status = 'done', lease_expires_at = NULL "
                   "WHERE id = %(job)s AND claim_token = %(token)s AND status = 'claimed'",
    "unconditional": "UPDATE jobs SET status = 'done', lease_expires_at = NULL WHERE id = %(job)s",
    "status": "UPDATE jobs SET status = 'done', lease_expires_at = NULL WHERE id = %(job)s AND status = 'claimed'",
}
ACKED = "SELECT 1 FROM jobs WHERE id = %(job)s AND claim_token = %(token)s AND status = 'done'"
ACK_OUTCOME_TIMEOUT_S = 5.0
FAIL = """
UPDATE jobs SET status = CASE WHEN attempts {past} %(max_attempts)s THEN 'dead' ELSE 'pending' END,
       available_at = now(), claim_token = NULL, lease_expires_at = NULL
WHERE id = %(job)s AND claim_token = %(token)s AND status = 'claimed'"""
DEAD_PAST = {"counted": ">=", "off_by_one": ">"}  # dead after max_attempts claims, or one more


class LeaseDb(Db):
    """Lease arithmetic on one clock: the database's now(), or (the broken variant) the worker's own."""

    def run(self, sql: str, args: dict[str, Any]) -> tuple[int, list[tuple[Any, ...]]]:
        now = "%(now)s" if self.cfg.param("clock") == "worker" else "now()"
        return super().run(sql.format(now=now), dict(args, now=datetime.datetime.now(datetime.UTC)))


class Heartbeat:
    """Extends the lease from its own thread; sets `lost` the moment an extension fails."""

    def __init__(self, db: LeaseDb, cfg: WorkerSettings, job: str, token: str, lost: threading.Event) -> None:
        self.db, self.cfg, self.job, self.token, self.lost = db, cfg, job, token, lost
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{job}", daemon=True)

    def beat(self) -> bool:
        ok = False
        for _ in range(2):  # a connection a server restart broke fails once; a fresh one answers
            try:
                rows, _ = self.db.run(EXTEND[self.cfg.param("extend")],
                                      {"job": self.job, "token": self.token, "lease": self.cfg.lease_s})
                ok = rows == 1
                break
            except TRANSIENT as exc:
                log(f"heartbeat for {self.job} failed: {exc!r}")
        probe.heartbeat(self.job, self.token, ok)
        if not ok:
            self.lost.set()
        return ok

    def _loop(self) -> None:
        while not self._done.wait(self.cfg.heartbeat_s) and self.beat():
            pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


def process(db: LeaseDb, hb_db: LeaseDb, cfg: WorkerSettings, stop: threading.Event,
            job: str, payload: dict[str, Any], token: str, attempt: int) -> None:
    mode, watchdog = cfg.param("heartbeat"), cfg.param("watchdog") == "on"
    lost = threading.Event()
    heartbeat = Heartbeat(hb_db, cfg, job, token, lost)
    if mode == "thread":
        heartbeat.start()
    elif mode == "inline":
        heartbeat.beat()
    try:
        try:
            finished = run_handler(payload, lost if watchdog else None)
        except JobFailed as exc:
            heartbeat.stop()
            probe.abandon(job, token, reason="handler failed")  # before the update that frees the job
            fail = FAIL.replace("{past}", DEAD_PAST[cfg.param("attempts")])
            args = {"job": job, "token": token, "max_attempts": cfg.max_attempts}
            rows, _ = retrying(lambda: db.run(fail, args), TRANSIENT, stop)
            log(f"{job} failed ({exc}); requeued or dead-lettered: {rows == 1}")
            return
        if watchdog and not (finished and checkpoint(db, heartbeat, mode, job, token, stop)):
            probe.abandon(job, token)
            log(f"{job}: lease lost, handler stopped before its effect")
            return
        probe.effect(job, token, fence=attempt)  # the claim count fences a stale owner's effect
    finally:
        heartbeat.stop()
    probe.ack(job, token, acknowledge(db, cfg, job, token, stop))


def acknowledge(db: LeaseDb, cfg: WorkerSettings, job: str, token: str, stop: threading.Event) -> bool | None:
    """Accepted or refused; None when the outcome cannot be learned (the connection died with the ack in
    flight, and the queue stayed unreachable): the lease then decides, at-least-once."""
    args = {"job": job, "token": token}
    try:
        rows, _ = db.run(ACK[cfg.param("ack")], args)
        return rows == 1
    except TRANSIENT as exc:
        log(f"{job}: the connection failed with the ack in flight ({exc!r}); asking the queue whether it landed")
    try:
        landed, _ = retrying(lambda: db.run(ACKED, args), TRANSIENT, stop, timeout=ACK_OUTCOME_TIMEOUT_S)
        if landed:
            return True
        rows, _ = retrying(lambda: db.run(ACK[cfg.param("ack")], args), TRANSIENT, stop, timeout=ACK_OUTCOME_TIMEOUT_S)
        return rows == 1
    except TRANSIENT as exc:
        log(f"{job}: the ack's outcome is unknown ({exc!r})")
        return None


def checkpoint(db: LeaseDb, heartbeat: Heartbeat, mode: str, job: str, token: str, stop: threading.Event) -> bool:
    """Between units of work, confirm the claim still holds before doing the effect."""
    if mode != "none":
        heartbeat.stop()
        return heartbeat.beat()
    rows, _ = retrying(lambda: db.run(STILL_OWNED, {"job": job, "token": token}), TRANSIENT, stop)
    return rows == 1


def claim(db: LeaseDb) -> tuple[str, dict[str, Any], int, str] | None:
    """Take the first claimable job; the `early` variant counts a lease as over half a lease before its end."""
    token = uuid.uuid4().hex
    args = {"token": token, "lease": db.cfg.lease_s,
            "early": db.cfg.lease_s / 2 if db.cfg.param("reclaim") == "early" else 0.0}
    if db.cfg.param("claim") == "racy":
        _, found = db.run(CLAIMABLE + " LIMIT 1", args)
        if not found:
            return None
        pause(RACY_WINDOW_S)  # another worker reads the same id meanwhile, and both take it
        _, rows = db.run(TAKE.format(which="%(id)s", now="{now}"), dict(args, id=found[0][0]))
    else:
        _, rows = db.run(CLAIM, args)
    return (*rows[0], token) if rows else None


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    db, hb_db = LeaseDb(cfg), LeaseDb(cfg)  # the heartbeat thread has its own connection
    log(f"started with {cfg.params}")

    def run(claimed: tuple[str, dict[str, Any], int, str]) -> None:
        job, payload, attempt, token = claimed
        probe.claim(job, token, attempt=attempt)
        process(db, hb_db, cfg, stop, job, payload, token, attempt)

    serve(stop, lambda: claim(db), run)


if __name__ == "__main__":
    main()
