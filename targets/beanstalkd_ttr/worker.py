"""beanstalkd_ttr worker: reserve with a TTR, touch as the heartbeat, delete as the ack.

Only the reserving connection may touch or delete a reserved job, and one connection is not shared
between threads, so the handler runs on its own thread while this one touches the job every
heartbeat_s. A touch that fails (NOT_FOUND: the TTR expired and the job went back to ready, or the
connection died and beanstalkd released it) stops the handler (the watchdog); a last touch before the
effect confirms the reservation still holds. A stale delete gets NOT_FOUND: the ack is rejected. A
failing handler releases the job, or buries it once it has been reserved max_attempts times.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import greenstalk

from chaos import probe
from chaos.worker import JobFailed, WorkerSettings, log, run_handler, settings, stop_flag
from chaos.worker.beanstalkd import RESERVE_S, TRANSIENT, connect


class Handler:
    """The job's handler on its own thread: finished (True), cancelled (False) or failed (JobFailed)."""

    def __init__(self, payload: dict[str, Any], lost: threading.Event) -> None:
        self.outcome: bool | JobFailed | None = None
        self._thread = threading.Thread(target=self._run, args=(payload, lost), daemon=True)
        self._thread.start()

    def _run(self, payload: dict[str, Any], lost: threading.Event) -> None:
        try:
            self.outcome = run_handler(payload, lost)
        except JobFailed as exc:
            self.outcome = exc

    def running(self, wait_s: float) -> bool:
        self._thread.join(wait_s)
        return self._thread.is_alive()


def touch(client: Any, job: greenstalk.Job[str]) -> bool:
    """Whether the reservation still holds: NOT_FOUND (the TTR expired) or a dead connection (beanstalkd
    released its reservations when it closed) says it does not."""
    try:
        client.touch(job)
        return True
    except greenstalk.NotFoundError:
        return False
    except TRANSIENT as exc:
        log(f"touch of job {job.id} failed: {exc!r}")
        return False


def process(client: Any, cfg: WorkerSettings, job: greenstalk.Job[str]) -> None:
    data = json.loads(job.body)
    name, payload = data["id"], data["payload"]
    reserves = int(client.stats_job(job)["reserves"])
    token = f"{job.id}:{reserves}"  # one reservation: the job's id and how many times it was reserved
    probe.send("claim", name, token=token, attempt=reserves)
    lost = threading.Event()
    handler = Handler(payload, lost)
    while handler.running(cfg.heartbeat_s):
        held = touch(client, job)
        probe.heartbeat(name, token, held)
        if not held:
            lost.set()  # the watchdog: the handler stops at once
    if isinstance(handler.outcome, JobFailed):
        probe.abandon(name, token, reason="handler failed")
        if reserves >= int(cfg.contract.get("max_attempts") or 1):
            client.bury(job)
            log(f"{name} failed ({handler.outcome}); buried after {reserves} reservation(s)")
        else:
            client.release(job)
        return
    if not handler.outcome or not touch(client, job):
        probe.abandon(name, token)
        log(f"{name}: reservation lost, handler stopped before its effect")
        return
    probe.effect(name, token)
    try:
        client.delete(job)
        ok: bool | None = True
    except greenstalk.NotFoundError:
        ok = False
    except TRANSIENT as exc:
        log(f"{name}: the connection failed with the delete in flight ({exc!r})")
        ok = None
    probe.ack(name, token, ok)


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    log(f"started with {cfg.params}")
    client = None
    while not stop.is_set():
        try:
            if client is None:
                client = connect()
            job = client.reserve(timeout=RESERVE_S)
        except greenstalk.TimedOutError:
            continue
        except TRANSIENT as exc:
            log(f"reserve failed: {exc!r}")
            if client is not None:
                client.close()
            client = None
            stop.wait(0.2)
            continue
        try:
            process(client, cfg, job)
        except TRANSIENT as exc:
            log(f"lost the connection while working on job {job.id}: {exc!r}")
            client.close()
            client = None
    log("stopping")


if __name__ == "__main__":
    main()
