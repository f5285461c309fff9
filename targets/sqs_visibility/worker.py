"""sqs_visibility worker: a received message is owned until its visibility timeout ends; a
ChangeMessageVisibility every heartbeat_s puts the timeout back to the full lease, and DeleteMessage with
the receipt handle is the ack. ApproximateReceiveCount is the attempt, and the queue's redrive policy
dead-letters a message received max_attempts times.

The fence is the worker's own lease deadline, on its monotonic clock: the last accepted receive or
extension's *send* time plus the timeout (the endpoint started counting later, so the deadline is never
late). An extension counts only if its answer came back before the old deadline (so the endpoint made it
while the message was still this worker's); once the deadline passes, the lease is lost for good: no
extension, no effect, no delete. The endpoint cannot be the fence: moto accepts an extension and a delete
with any receipt handle the message ever had, even after another worker received it again (see README).
`ack = unfenced` trusts the endpoint's answers alone.

The handler runs on its own thread while this one extends (`heartbeat = none`: never); a failed extension
stops it (the watchdog). A failing handler makes the message visible at once, so the next receive retries
it, or, past maxReceiveCount, moves it to the dead-letter queue.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import botocore.exceptions

from chaos import probe
from chaos.worker import HandlerThread, JobFailed, WorkerSettings, log, retrying, serve_jobs, settings, stop_flag
from chaos.worker.sqs import TRANSIENT, WAIT_S, connect, error_code, queue_names, queue_url

Received = tuple[dict[str, Any], float]  # the message, and when its receive was sent (monotonic)


class Lease:
    """One receive's ownership: its receipt handle and, fenced, its deadline."""

    def __init__(self, client: Any, url: str, message: dict[str, Any], sent: float, visibility_s: int,
                 fenced: bool) -> None:
        self.client, self.url, self.handle = client, url, message["ReceiptHandle"]
        self.visibility_s, self.fenced = visibility_s, fenced
        self.deadline = sent + visibility_s
        self.lost = False

    def holds(self) -> bool:
        """Whether the lease still holds by its deadline (unfenced: whether the endpoint refused nothing yet)."""
        if self.fenced and time.monotonic() >= self.deadline:
            self.lost = True
        return not self.lost

    def extend(self) -> bool:
        """ChangeMessageVisibility back to the full timeout; whether this execution still owns the message."""
        if not self.holds():
            return False
        sent = time.monotonic()
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
        self.deadline = sent + self.visibility_s
        return True

    def release(self) -> None:
        """Make the message visible again at once (a failed handler's retry, or its redrive)."""
        if self.holds():
            try:
                self.client.change_message_visibility(QueueUrl=self.url, ReceiptHandle=self.handle,
                                                      VisibilityTimeout=0)
            except (*TRANSIENT, botocore.exceptions.ClientError) as exc:
                log(f"release failed ({exc!r}): the timeout will return it")

    def delete(self, attempt: int) -> tuple[bool | None, str]:
        """DeleteMessage: True accepted while the lease held, False refused, None unknown (no answer, or one
        that came after the deadline: the delete may have landed after another worker received the message);
        and what the endpoint answered, for the ledger."""
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


def process(client: Any, urls: tuple[str, str], cfg: WorkerSettings, received: Received) -> None:
    message, sent = received
    data = json.loads(message["Body"])
    job, payload = data["id"], data["payload"]
    attempt = int(message["Attributes"]["ApproximateReceiveCount"])
    token = f"{message['MessageId'][:8]}:{attempt}:{uuid.uuid4().hex[:6]}"  # one receive
    fenced = cfg.param("ack") == "fenced"
    lease = Lease(client, urls[0], message, sent, int(cfg.lease_s), fenced)
    probe.claim(job, token, attempt=attempt)
    lost = threading.Event()
    handler = HandlerThread(payload, lost)
    extending = cfg.param("heartbeat") == "thread"
    while handler.running(cfg.heartbeat_s):
        if extending:
            held = lease.extend()
            probe.heartbeat(job, token, held)
            if not held:
                lost.set()  # the watchdog: the handler stops at once
    if isinstance(handler.outcome, JobFailed):
        probe.abandon(job, token, reason="handler failed")
        lease.release()
        log(f"{job} failed ({handler.outcome}) on receive {attempt}; visible again (dead-lettered past "
            f"maxReceiveCount = {cfg.max_attempts})")
        return
    if not handler.outcome or (fenced and not lease.extend()):
        probe.abandon(job, token)
        log(f"{job}: lease lost, stopped before its effect")
        return
    probe.effect(job, token)
    if fenced and not lease.extend():  # the delete goes out with a full timeout ahead of it, or not at all
        probe.abandon(job, token)
        log(f"{job}: lease lost after the effect, left to the visibility timeout")
        return
    ok, said = lease.delete(attempt)
    log(f"{job}: {said}")
    probe.send("ack", job, token=token, ok=ok, endpoint=said)  # the ack, with the endpoint's answer in the ledger
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
                                       MessageSystemAttributeNames=["ApproximateReceiveCount"])
        messages = reply.get("Messages") or []
        return (messages[0], sent) if messages else None

    serve_jobs(stop, claim, lambda received: process(client, urls, cfg, received), TRANSIENT)


if __name__ == "__main__":
    main()
