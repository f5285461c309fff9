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
import uuid
from typing import Any

import greenstalk

from chaos import probe
from chaos.worker import HandlerThread, JobFailed, WorkerSettings, log, settings, stop_flag
from chaos.worker.beanstalkd import RESERVE_S, TRANSIENT, connect


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


def process(client: Any, session: str, cfg: WorkerSettings, job: greenstalk.Job[str]) -> None:
    """Work on one reservation; greenstalk.NotFoundError when the reservation ends under a command."""
    data = json.loads(job.body)
    name, payload = data["id"], data["payload"]
    reserves = int(client.stats_job(job)["reserves"])
    # One reservation: this connection, the job's id and its reserve count (not unique alone: a binlog
    # does not record reserves, so a restarted server may count them again).
    token = f"{session}:{job.id}:{reserves}"
    probe.claim(name, token, attempt=reserves)
    lost = threading.Event()
    handler = HandlerThread(payload, lost)
    while handler.running(cfg.heartbeat_s):
        held = touch(client, job)
        probe.heartbeat(name, token, held)
        if not held:
            lost.set()  # the watchdog: the handler stops at once
    if isinstance(handler.outcome, JobFailed):
        probe.abandon(name, token, reason="handler failed")
        if reserves >= cfg.max_attempts:
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
    client, session = None, ""
    while not stop.is_set():
        try:
            if client is None:
                client, session = connect(), uuid.uuid4().hex[:8]
            job = client.reserve(timeout=RESERVE_S)
        except greenstalk.TimedOutError:
            probe.ready()
            continue
        except TRANSIENT as exc:
            log(f"reserve failed: {exc!r}")
            if client is not None:
                client.close()
            client = None
            stop.wait(0.2)
            continue
        try:
            process(client, session, cfg, job)
        except greenstalk.NotFoundError:
            log(f"job {job.id}: the reservation ended under a command (its TTR expired)")
        except TRANSIENT as exc:
            log(f"lost the connection while working on job {job.id}: {exc!r}")
            client.close()
            client = None
    log("stopping")


if __name__ == "__main__":
    main()
