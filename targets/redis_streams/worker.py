"""redis_streams worker: a Redis Streams consumer group as the queue (chaos.worker.redis_streams).

Each process is a consumer of its own (worker name and a random suffix, so a restarted worker is a new
consumer). Its claim is one script: XAUTOCLAIM an entry idle past the lease (a dead owner's: the
delivery counter is the attempt, and an entry delivered past max_attempts times is dead-lettered), else
XREADGROUP a new one. While the handler runs, a heartbeat thread extends the lease (XCLAIM to itself,
JUSTID, which resets the entry's idle time) only while the entry is still pending for this consumer with
this delivery count; when an extension fails the watchdog stops the handler, and a last extension before
the effect confirms the claim still holds. The ack is XACK and the done record in one script, under the
same check: a stale consumer's ack is rejected.

Broken variants ([params], one rule each): `ack=plain` sends the bare XACK, which Redis accepts from any
consumer while the entry is pending (for whichever consumer now holds it); `heartbeat=none` never extends
the lease; `reclaim=none` never runs XAUTOCLAIM, so a dead consumer's entries stay pending for ever.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, WorkerSettings, log, run_handler, serve_jobs, settings, stop_flag
from chaos.worker.redis import TRANSIENT, connect, parse, settle
from chaos.worker.redis_streams import (
    ACK,
    CLAIM,
    EXTEND,
    FAIL,
    GROUP,
    PLAIN_ACK,
    StreamKeys,
    claim_token,
    stream_keys,
)

RELEASE_IDLE_FACTOR = 2  # a failed handler's entry is marked idle this many leases: past any XAUTOCLAIM's minimum


@dataclass(frozen=True)
class Claim:
    """One delivery of a stream entry to this consumer."""

    entry_id: str
    raw: str
    deliveries: int
    job: str
    payload: dict[str, Any]
    token: str


class Lease:
    """Extends one claim's lease from its own thread; sets `lost` the moment an extension fails."""

    def __init__(self, cfg: WorkerSettings, extend: Any, k: StreamKeys, consumer: str, claim: Claim,
                 lost: threading.Event) -> None:
        self.extend = extend  # EXTEND, on the heartbeat's own connection
        self.k, self.consumer, self.claim, self.lost, self.interval = k, consumer, claim, lost, cfg.heartbeat_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="heartbeat", daemon=True)

    def _call(self, extend: bool) -> bool:
        """Whether the entry is still this claim's (extending its lease with `extend`); a connection that
        fails twice (a restart, a cut) cannot prove it, and counts as lost."""
        claim = self.claim
        for _ in range(2):
            try:
                held = self.extend(keys=[self.k.stream], args=[GROUP, claim.entry_id, self.consumer,
                                                               claim.deliveries, "1" if extend else "0"])
                return bool(held == 1)
            except TRANSIENT as exc:
                log(f"lease extension of {claim.job} failed: {exc!r}")
        return False

    def beat(self) -> bool:
        ok = self._call(extend=True)
        probe.heartbeat(self.claim.job, self.claim.token, ok)
        if not ok:
            self.lost.set()
        return ok

    def held(self) -> bool:
        """Whether the claim still holds, without extending it (the heartbeat=none variant's checkpoint)."""
        return self._call(extend=False)

    def _loop(self) -> None:
        while not self._done.wait(self.interval) and self.beat():
            pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client, k = connect(), stream_keys()
    consumer = f"{cfg.worker_id}:{uuid.uuid4().hex[:8]}"
    claim_script, fail_script = client.register_script(CLAIM), client.register_script(FAIL)
    extend_script = connect().register_script(EXTEND)
    ack_script = client.register_script(PLAIN_ACK if cfg.param("ack") == "plain" else ACK)
    lease_ms = int(cfg.lease_s * 1000)
    reclaim = "1" if cfg.param("reclaim") == "xautoclaim" else "0"
    extending, watchdog = cfg.param("heartbeat") == "thread", cfg.param("watchdog") == "on"
    log(f"started as consumer {consumer} with {cfg.params}")

    def claim() -> Claim | None:
        reply: Any = claim_script(keys=[k.stream, k.dead], args=[GROUP, consumer, lease_ms, cfg.max_attempts, reclaim])
        if not reply:
            return None
        if reply[0] == "dead":
            log(f"entry {reply[1]} dead-lettered after {reply[2]} deliveries")
            return None
        entry_id, raw, deliveries = str(reply[0]), str(reply[1]), int(reply[2])
        job, payload = parse(raw)
        return Claim(entry_id, raw, deliveries, job, payload, claim_token(consumer, entry_id, deliveries))

    def process(c: Claim) -> None:
        lost = threading.Event()
        lease = Lease(cfg, extend_script, k, consumer, c, lost)
        if extending:
            lease.start()  # before the claim probe: a gate holding it must not stop the extensions
        probe.claim(c.job, c.token, attempt=c.deliveries)
        try:
            try:
                finished = run_handler(c.payload, lost if watchdog else None)
            except JobFailed as exc:
                lease.stop()
                probe.abandon(c.job, c.token, reason="handler failed")  # before the release frees the entry
                outcome = settle(lambda: fail_script(
                    keys=[k.stream, k.dead],
                    args=[GROUP, c.entry_id, consumer, c.deliveries, c.raw, cfg.max_attempts,
                          RELEASE_IDLE_FACTOR * lease_ms]), stop)
                log(f"{c.job} failed ({exc}); released (0), dead-lettered (1), no longer ours (-1): {outcome}")
                return
            lease.stop()
            if watchdog and not (finished and (lease.beat() if extending else lease.held())):
                probe.abandon(c.job, c.token)
                log(f"{c.job}: lease lost, handler stopped before its effect")
                return
            probe.effect(c.job, c.token, fence=c.deliveries)  # the delivery counter grows with every claim
        finally:
            lease.stop()
        done = settle(lambda: ack_script(keys=[k.stream, k.done],
                                         args=[GROUP, c.entry_id, consumer, c.deliveries, c.job, c.token]), stop)
        if cfg.param("ack") == "plain":
            log(f"{c.job}: plain XACK of entry {c.entry_id} by {consumer}: {'accepted' if done == 1 else done}")
        probe.ack(c.job, c.token, None if done is None else done == 1)

    serve_jobs(stop, claim, process, TRANSIENT)


if __name__ == "__main__":
    main()
