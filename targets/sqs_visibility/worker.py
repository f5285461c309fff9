"""sqs_visibility worker: a received message is owned until its visibility timeout ends; a
ChangeMessageVisibility every heartbeat_s puts the timeout back to the full lease, and DeleteMessage with
the receipt handle is the ack. ApproximateReceiveCount is the attempt, and the queue's redrive policy
dead-letters a message received max_attempts times.

The fence is the worker's own lease deadline, on its monotonic clock: the last accepted receive or
extension's *send* time plus the timeout, less a safety margin (the endpoint started counting later, so the
deadline is never late, and the margin keeps every request off its edge). An extension counts only if its
answer came back before the old deadline (so the endpoint made it while the message was still this
worker's); once the deadline passes, the lease is lost for good: no extension, no effect, no delete sent.
The endpoint cannot be the fence: moto accepts an extension and a delete with any receipt handle the
message ever had, even after another worker received it again (see README). `ack = unfenced` trusts the
endpoint's answers alone.

An extender thread extends every heartbeat_s from before the claim probe (a scenario's gate holding that
probe must not stop the extensions) while this thread runs the handler; a failed extension stops the
handler (the watchdog). `heartbeat = none` has no extender; fenced, it still makes the two extensions that
gate the effect and the delete. A failing handler makes the message visible again at once, so the next
receive retries it, or, past maxReceiveCount, moves it to the dead-letter queue.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import botocore.exceptions

from chaos import probe
from chaos.worker import JobFailed, WorkerSettings, log, retrying, run_handler, serve_jobs, settings, stop_flag
from chaos.worker.sqs import TRANSIENT, WAIT_S, connect, error_code, queue_names, queue_url

Received = tuple[dict[str, Any], float]  # the message, and when its receive was sent (monotonic)
MARGIN_FRACTION, MIN_MARGIN_S = 0.05, 0.1  # the deadline's safety margin: 5% of the timeout, at least 0.1 s


def margin_s(visibility_s: int) -> float:
    """How far before the endpoint's earliest possible expiry the worker's own deadline falls."""
    return max(MIN_MARGIN_S, MARGIN_FRACTION * visibility_s)


class Lease:
    """One receive's ownership: its receipt handle and, fenced, its deadline."""

    def __init__(self, client: Any, url: str, message: dict[str, Any], sent: float, visibility_s: int,
                 fenced: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.client, self.url, self.handle, self.clock = client, url, message["ReceiptHandle"], clock
        self.visibility_s, self.fenced = visibility_s, fenced
        self.term_s = visibility_s - margin_s(visibility_s)
        self.deadline = sent + self.term_s
        self.lost = False

    def holds(self) -> bool:
        """Whether the lease still holds by its deadline (unfenced: whether the endpoint refused nothing yet)."""
        if self.fenced and self.clock() >= self.deadline:
            self.lost = True
        return not self.lost

    def extend(self) -> bool:
        """ChangeMessageVisibility back to the full timeout; whether this execution still owns the message."""
        if not self.holds():
            return False
        sent = self.clock()
        try:
            self.client.change_message_visibility(QueueUrl=self.url, ReceiptHandle=self.handle,
                                                  VisibilityTimeout=self.visibility_s)
        except botocore.exceptions.ClientError as exc:
            log(f"the endpoint refused the extension: {error_code(exc)}")
            self.lost = True
            return False
        except TRANSIENT as exc:
            log(f"extension failed: {exc!r}")
            self.lost = True  # it may or may not have landed: the deadline it would set is not known to hold
            return False
        if not self.holds():  # answered after the old deadline: made when the message may have been another's
            return False
        self.deadline = sent + self.term_s
        return True

    def release(self) -> None:
        """Make the message visible again at once (a failed handler's retry, or its redrive)."""
        if self.holds():
            try:
                self.client.change_message_visibility(QueueUrl=self.url, ReceiptHandle=self.handle,
                                                      VisibilityTimeout=0)
            except (*TRANSIENT, botocore.exceptions.ClientError) as exc:
                log(f"release failed ({exc!r}): the timeout will return it")

    def delete(self, attempt: int) -> tuple[bool | None, str] | None:
        """DeleteMessage: True accepted while the lease held, False refused, None unknown (no answer, or one
        that came after the deadline: the delete may have landed after another worker received the message);
        and what the endpoint answered, for the ledger. None itself: not sent, the lease's deadline passed."""
        if not self.holds():
            return None
        try:
            self.client.delete_message(QueueUrl=self.url, ReceiptHandle=self.handle)
        except botocore.exceptions.ClientError as exc:
            return False, f"DeleteMessage refused the receipt handle of receive {attempt}: {error_code(exc)}"
        except TRANSIENT as exc:
            return None, f"DeleteMessage got no answer: {exc!r}"
        said = f"DeleteMessage accepted the receipt handle of receive {attempt}"
        if not self.holds():
            return None, f"{said}, after the lease's deadline: whether the message was still ours is unknown"
        return True, said


class Extender:
    """Extends one lease every heartbeat_s from its own thread until stopped; sets `lost` (the watchdog)
    the moment an extension fails."""

    def __init__(self, lease: Lease, job: str, token: str, interval: float, lost: threading.Event) -> None:
        self.lease, self.job, self.token, self.interval, self.lost = lease, job, token, interval, lost
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="extender", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(self.interval):
            if not beat(self.lease, self.job, self.token):
                self.lost.set()
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def beat(lease: Lease, job: str, token: str) -> bool:
    """One extension, reported as the heartbeat probe: whether the lease still holds."""
    held = lease.extend()
    probe.heartbeat(job, token, held)
    return held


def process(client: Any, urls: tuple[str, str], cfg: WorkerSettings, received: Received) -> None:
    message, sent = received
    data = json.loads(message["Body"])
    job, payload = data["id"], data["payload"]
    attempt = int(message["Attributes"]["ApproximateReceiveCount"])
    token = f"{message['MessageId'][:8]}:{attempt}:{uuid.uuid4().hex[:6]}"  # one receive
    fenced = cfg.param("ack") == "fenced"
    lease = Lease(client, urls[0], message, sent, int(cfg.lease_s), fenced)
    lost = threading.Event()
    # started before the claim probe: a gate holding that probe must not stop the extensions
    extender = Extender(lease, job, token, cfg.heartbeat_s, lost) if cfg.param("heartbeat") == "thread" else None
    outcome: bool | JobFailed
    try:
        probe.claim(job, token, attempt=attempt)
        outcome = run_handler(payload, lost)
    except JobFailed as exc:
        outcome = exc
    finally:
        if extender is not None:
            extender.stop()
    if isinstance(outcome, JobFailed):
        probe.abandon(job, token, reason="handler failed")
        lease.release()
        log(f"{job} failed ({outcome}) on receive {attempt}; visible again (dead-lettered past "
            f"maxReceiveCount = {cfg.max_attempts})")
        return
    if not outcome or (fenced and not beat(lease, job, token)):
        probe.abandon(job, token)
        log(f"{job}: lease lost, stopped before its effect")
        return
    probe.effect(job, token)
    if fenced and not beat(lease, job, token):  # the delete goes out with a full timeout ahead of it, or not at all
        probe.abandon(job, token)
        log(f"{job}: lease lost after the effect, left to the visibility timeout")
        return
    answer = lease.delete(attempt)
    if answer is None:  # stalled past the deadline since the extension just made
        probe.abandon(job, token)
        log(f"{job}: lease lost before the delete, left to the visibility timeout")
        return
    ok, said = answer
    log(f"{job}: {said}")
    probe.send("ack", job, token=token, ok=ok, endpoint=said)  # probe.ack, with the endpoint's answer
    if ok:
        record(client, urls[1], job, token)


def record(client: Any, done_url: str, job: str, token: str) -> None:
    """The completion record the control reads (SQS keeps none of a deleted message)."""
    try:
        client.send_message(QueueUrl=done_url, MessageBody=json.dumps({"id": job, "token": token}))
    except (*TRANSIENT, botocore.exceptions.ClientError) as exc:
        log(f"{job}: could not write its completion record: {exc!r}")


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client = connect()
    main_queue, _, done_queue = queue_names()
    urls = (retrying(lambda: queue_url(client, main_queue), TRANSIENT, stop),
            retrying(lambda: queue_url(client, done_queue), TRANSIENT, stop))
    log(f"started with {cfg.params}")

    def claim() -> Received | None:
        sent = time.monotonic()
        reply = client.receive_message(QueueUrl=urls[0], MaxNumberOfMessages=1, WaitTimeSeconds=WAIT_S,
                                       AttributeNames=["ApproximateReceiveCount"])
        messages = reply.get("Messages") or []
        return (messages[0], sent) if messages else None

    serve_jobs(stop, claim, lambda received: process(client, urls, cfg, received), TRANSIENT)


if __name__ == "__main__":
    main()
