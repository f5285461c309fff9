"""nats_jetstream worker: pull one message at a time from the run's durable consumer, heartbeat it with
in-progress acks (+WPI) beside the handler, ack it with a double ack (+ACK as a request: the server's reply
says it processed it), and on a failing handler nak it (-NAK) or, at its last delivery, terminate it (+TERM).

JetStream takes an ack or an in-progress ack for a message from any delivery of it: a stale owner's ack
after AckWait redelivered the message to another worker deletes it from the work queue under the new
owner, and the server's reply to it is the same as to a current ack (README.md). So the worker fences
itself by its lease: the server's AckWait starts no sooner than the pull request (or the in-progress ack)
left, so until that time plus AckWait the delivery is still this execution's. Nothing is sent for a
delivery with less than fence_margin_s of that lease left (the watchdog stops its handler), and a reply
that comes after the lease ended cannot tell whether it landed before the redelivery: its outcome is
unknown. A lease holds only on the connection that took the delivery: a server that crashed meanwhile
may have forgotten it. `fence = "none"` drops the fence and trusts the server's reply, as a plain JetStream
worker does.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from chaos import probe
from chaos.worker import HandlerThread, JobFailed, WorkerSettings, log, settings, stop_flag
from chaos.worker.nats import TRANSIENT, JetStream, Names, connect, names, parse

REPLY_S = 0.5  # how long an in-progress ack, an ack, a nak or a term waits for the server's reply
RELEASED = "released before its lease ended"  # an abandon's reason: given up, not lost


class Lease:
    """A delivery's lease by this worker's monotonic clock: it holds until the time the last request the
    server confirmed left, plus AckWait, and only on the connection that took the delivery (a server crash
    between may have forgotten it: JetStream writes its consumer's state behind)."""

    def __init__(self, client: JetStream, epoch: int, sent: float, cfg: WorkerSettings) -> None:
        self.client, self.epoch, self.length = client, epoch, cfg.lease_s
        self.until = sent + self.length
        self.margin, self.fenced = float(cfg.param("fence_margin_s")), cfg.param("fence") == "lease"

    def held(self, margin: float) -> bool:
        return self.client.epoch() == self.epoch and time.monotonic() < self.until - margin

    def usable(self) -> bool:
        """Whether a command for the delivery may still be sent: always, when unfenced."""
        return not self.fenced or self.held(self.margin)

    def given_up(self) -> str:
        """Why the worker gives the delivery up: "lost" once its lease ran out (it may be another's now),
        else a release ahead of the deadline, before the server can hand it to anyone."""
        return "lost" if not self.held(0.0) else RELEASED

    def answered(self) -> bool:
        """Whether a reply just received proves the server took the command while the delivery was still
        ours: it came before the lease ended (always, when unfenced)."""
        return not self.fenced or self.held(0.0)


def command(client: JetStream, msg: Any, lease: Lease, verb: bytes) -> bool | None:
    """Send +WPI, +ACK, -NAK or +TERM for the delivery as a request. True: the server took it while the
    delivery was ours; False: not sent, the lease ran out; None: sent, but no reply came or it came too
    late to tell."""
    if not lease.usable():
        return False
    try:
        client.request(msg.reply, verb, REPLY_S)
    except TRANSIENT as exc:
        log(f"{verb.decode()} of {msg.reply} got no reply: {exc!r}")
        return None
    return True if lease.answered() else None


def extend(client: JetStream, msg: Any, lease: Lease) -> bool:
    """An in-progress ack; the lease now runs from when it left. Any doubt counts as a lost lease."""
    sent = time.monotonic()
    if command(client, msg, lease, b"+WPI"):
        lease.until = sent + lease.length
        return True
    return False


def process(client: JetStream, session: str, cfg: WorkerSettings, msg: Any, epoch: int, pulled: float) -> None:
    name, payload = parse(msg.data)
    meta = msg.metadata
    delivered = int(meta.num_delivered)
    # One delivery: the stream sequence and its delivery count (a memory stream a restart lost numbers
    # anew: the session keeps the token unique).
    token = f"{session}:{meta.sequence.stream}:{delivered}"
    lease = Lease(client, epoch, pulled, cfg)
    # Dated when the pull request left: the server's AckWait starts between then and the message's arrival.
    probe.claim(name, token, attempt=delivered, sent=pulled)
    if not lease.usable():  # the claim's report was held (a gate, a stop) past the lease, or a crash came between
        probe.abandon(name, token, reason=lease.given_up())
        log(f"{name}: the lease ran out before the handler started")
        return
    lost = threading.Event()
    handler = HandlerThread(payload, lost)
    while handler.running(cfg.heartbeat_s):
        if cfg.param("heartbeat") == "none":
            continue
        held = extend(client, msg, lease)
        probe.heartbeat(name, token, held)
        if not held:
            lost.set()  # the watchdog: the handler stops at once
    if isinstance(handler.outcome, JobFailed):
        probe.abandon(name, token, reason="handler failed")
        verb = b"+TERM" if delivered >= cfg.max_attempts else b"-NAK"  # the last delivery is dead-lettered
        outcome = command(client, msg, lease, verb)
        log(f"{name} failed ({handler.outcome}) on delivery {delivered}: {verb.decode()} taken: {outcome}")
        return
    if not handler.outcome or not lease.usable():
        probe.abandon(name, token, reason=lease.given_up())
        log(f"{name}: the lease ran out, stopped before the effect")
        return
    probe.effect(name, token)
    if not lease.usable():
        probe.abandon(name, token, reason=lease.given_up())
        log(f"{name}: the lease ran out after the effect; the ack is not sent")
        return
    probe.ack(name, token, command(client, msg, lease, b"+ACK"))


def serve(client: JetStream, cfg: WorkerSettings, stop: threading.Event, run: Names) -> None:
    session = uuid.uuid4().hex[:8]
    wait_s = float(cfg.param("pull_wait_s"))
    while not stop.is_set():
        epoch = client.epoch()
        try:
            msg, pulled = client.pull(run, wait_s)
        except TRANSIENT as exc:
            log(f"pull failed: {exc!r}")
            stop.wait(0.2)
            continue
        if msg is None:
            probe.ready()
        else:
            process(client, session, cfg, msg, epoch, pulled)


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    log(f"started with {cfg.params}")
    client = None
    while client is None and not stop.is_set():
        try:
            client = connect(on_event=log)
        except TRANSIENT as exc:
            log(f"connect failed: {exc!r}")
            stop.wait(0.2)
    if client is not None:
        try:
            serve(client, cfg, stop, names())
        finally:
            client.close()
    log("stopping")


if __name__ == "__main__":
    main()
