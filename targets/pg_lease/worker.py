"""pg_lease worker: the visibility-timeout seed, with its broken variants behind parameters.

Correct (the defaults): the claim predicate includes `lease_expires_at`, FOR UPDATE SKIP LOCKED, a
random claim token, a heartbeat thread that extends only while `claim_token` and status still match
(RowsAffected() == 1), a watchdog that stops the handler when an extension fails, a conditional ack,
attempts counted against max_attempts, and every timestamp from the database's clock. Each parameter
breaks one of those rules (target.toml lists them).

`heartbeat = "sidecar"` extends the lease from a detached helper process instead of a thread: started
at the claim (before the claim is reported) by a double fork and setsid(), so it is outside the worker's
process tree, with its own connection, the same extension (and `extend` rule) and its own heartbeat
probes (a forked child opens its own sink connection; the worker id comes from the environment). The
worker holds the write end of a pipe: a byte or EOF (the worker died) ends the sidecar. It answers on a
second pipe: a byte when an extension failed, which sets the same `lost` event the thread sets (so the
watchdog works as in thread mode; a sidecar that exits unasked counts as a failed extension too), and
EOF when it has exited. Its flaw is the one a sidecar has in real deployments: a SIGSTOPped worker's
lease is still extended, so a frozen owner keeps its job and resumes it as if nothing had happened.
"""

from __future__ import annotations

import datetime
import os
import signal
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
STORE_RESULT = "INSERT INTO results (job, token) VALUES (%(job)s, %(token)s) ON CONFLICT DO NOTHING"
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
        self._thread = threading.Thread(target=self.loop, name=f"heartbeat-{job}", daemon=True)

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

    def loop(self) -> None:
        """Extend every heartbeat_s until stopped or an extension fails (the thread's body, the sidecar's)."""
        while not self._done.wait(self.cfg.heartbeat_s) and self.beat():
            pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


STOP_BYTE, LOST_BYTE = b"S", b"L"


class Sidecar:
    """Extends the lease from a detached process (double fork, setsid): outside the worker's process tree,
    so a SIGSTOP of that tree leaves it extending. Stopped by a byte on its pipe, or by the pipe's EOF
    when the worker dies; it exits after its first failed extension, as the thread's loop ends there
    (a connection that fails twice in a row fails the beat). `beat` is the worker's own, for the
    checkpoint after `stop`, so one execution's heartbeats stay sequential."""

    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat
        self.lost = heartbeat.lost
        self._stop_w: int | None = None
        self._back_r: int | None = None
        self._stopping = False
        self._listener: threading.Thread | None = None

    def beat(self) -> bool:
        return self.heartbeat.beat()

    def start(self) -> None:
        stop_r, stop_w = os.pipe()
        back_r, back_w = os.pipe()
        first = os.fork()  # the worker is single-threaded here: the previous job's listener has been joined
        if first == 0:
            code = 1
            try:
                os.setsid()  # a session of its own; the fork below leaves the worker's process tree
                code = self._run(stop_r, back_w) if os.fork() == 0 else 0
            except BaseException as exc:  # noqa: BLE001 - reported, then the process ends below
                log(f"sidecar {os.getpid()} for {self.heartbeat.job} failed: {exc!r}")
            finally:
                os._exit(code)  # never back into the worker's code, and no finalizer of its objects
        os.waitpid(first, 0)  # the middle process exits at once: the sidecar is an orphan, no child of ours
        os.close(stop_r)
        os.close(back_w)
        self._stop_w, self._back_r = stop_w, back_r
        self._listener = threading.Thread(target=self._listen, args=(back_r,), name="sidecar-listener", daemon=True)
        self._listener.start()

    def _listen(self, back_r: int) -> None:
        """A failed extension (its byte) or a sidecar that ended without being asked loses the lease."""
        while chunk := os.read(back_r, 1):
            if chunk == LOST_BYTE:
                self.lost.set()
        if not self._stopping:
            self.lost.set()

    def stop(self) -> None:
        """Ask the sidecar to stop and wait for it to exit (EOF on its answer pipe): its last beat, probe
        included, is over before the worker's own checkpoint beat."""
        if self._stop_w is None:
            return
        self._stopping = True
        try:
            os.write(self._stop_w, STOP_BYTE)
        except BrokenPipeError:
            pass  # it has already exited
        os.close(self._stop_w)
        self._stop_w = None
        if self._listener is not None:
            self._listener.join()
        if self._back_r is not None:
            os.close(self._back_r)
            self._back_r = None

    def _run(self, stop_r: int, back_w: int) -> int:
        """The sidecar process: the thread's loop on a fresh connection, until a stop byte, EOF or a failure."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the worker's stop flag is not this process's
        _release_inherited(keep={0, 1, 2, stop_r, back_w})
        hb = self.heartbeat
        beats = Heartbeat(LeaseDb(hb.cfg), hb.cfg, hb.job, hb.token, threading.Event())  # its own connection

        why = ["extension failed"]

        def wait_for_stop() -> None:
            # A stop byte, or EOF: the worker closed its end, or died (its descriptors closed with it).
            why[0] = "asked to stop" if os.read(stop_r, 1) else "the worker's pipe closed"
            beats.stop()  # ends the loop after the beat under way (its thread was never started)

        threading.Thread(target=wait_for_stop, name="sidecar-stop", daemon=True).start()
        log(f"sidecar {os.getpid()} extends {hb.job}")
        beats.loop()
        if beats.lost.is_set():
            why[0] = "extension failed"
            try:
                os.write(back_w, LOST_BYTE)
            except BrokenPipeError:
                pass
        log(f"sidecar {os.getpid()} for {hb.job} exits: {why[0]}")
        return 0


def _release_inherited(keep: set[int]) -> None:
    """Point every inherited descriptor but `keep` at /dev/null: the worker's database and sink sockets
    (and other jobs' pipe ends) are no longer held open by the sidecar, so the worker's death closes them,
    while their numbers stay taken: a stale object of the worker's that closes its descriptor (the probe
    client, reconnecting in a forked child) closes /dev/null, not a socket of the sidecar's."""
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep and fd != null:
            try:
                os.dup2(null, fd)
            except OSError:
                pass  # the listing's own descriptor, closed by now


def extender(hb_db: LeaseDb, cfg: WorkerSettings, job: str, token: str) -> Heartbeat | Sidecar:
    """The claim's lease extender for the `heartbeat` mode (`none` and `inline` use the worker's own beat)."""
    heartbeat = Heartbeat(hb_db, cfg, job, token, threading.Event())
    return Sidecar(heartbeat) if cfg.param("heartbeat") == "sidecar" else heartbeat


def process(db: LeaseDb, cfg: WorkerSettings, stop: threading.Event, heartbeat: Heartbeat | Sidecar,
            job: str, payload: dict[str, Any], token: str, attempt: int) -> None:
    mode, watchdog = cfg.param("heartbeat"), cfg.param("watchdog") == "on"
    ended = token if cfg.param("report_token") == "claim" else f"wrong-{token}"  # what its abandon and ack report
    lost = heartbeat.lost
    if mode == "thread":
        heartbeat.start()
    elif mode == "inline":
        heartbeat.beat()
    try:
        try:
            finished = run_handler(payload, lost if watchdog else None)
        except JobFailed as exc:
            heartbeat.stop()
            probe.abandon(job, ended, reason="handler failed")  # before the update that frees the job
            fail = FAIL.replace("{past}", DEAD_PAST[cfg.param("attempts")])
            args = {"job": job, "token": token, "max_attempts": cfg.max_attempts}
            rows, _ = retrying(lambda: db.run(fail, args), TRANSIENT, stop)
            log(f"{job} failed ({exc}); requeued or dead-lettered: {rows == 1}")
            return
        if watchdog and not (finished and checkpoint(db, heartbeat, mode, job, token, stop)):
            probe.abandon(job, ended)
            log(f"{job}: lease lost, handler stopped before its effect")
            return
        probe.effect(job, token, fence=attempt)  # the claim count fences a stale owner's effect
    finally:
        heartbeat.stop()
    acked = acknowledge(db, cfg, job, token, stop)
    if cfg.param("report") == "result-store":
        # A result backend's way: the execution's result is stored whether or not the queue took its ack,
        # and the worker leaves the word to the control, which reads that store (control.py).
        retrying(lambda: db.run(STORE_RESULT, {"job": job, "token": token}), TRANSIENT, stop)
        acked = None
    probe.ack(job, ended, acked)


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


def checkpoint(db: LeaseDb, heartbeat: Heartbeat | Sidecar, mode: str, job: str, token: str,
               stop: threading.Event) -> bool:
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
        heartbeat = extender(hb_db, cfg, job, token)
        if isinstance(heartbeat, Sidecar):
            # At the claim itself, before its report: from here on the lease is extended whatever the
            # worker does (its first beat is a heartbeat_s away, the claim probe is sent now).
            heartbeat.start()
        probe.claim(job, token, attempt=attempt)
        process(db, cfg, stop, heartbeat, job, payload, token, attempt)

    serve(stop, lambda: claim(db), run)


if __name__ == "__main__":
    main()
