"""Control side of the SQS targets: the run's queue with the lease as its visibility timeout and a
redrive policy to its dead-letter queue, enqueue by SendMessage, each worker's connection settings, and a
snapshot of what the endpoint can honestly show.

SQS shows no message's state without receiving it, and a receive changes it (it hides the message and
counts a receive towards the redrive): the snapshot never receives from the jobs' queue. It reads the
dead-letter queue (nobody else receives there; each message it sees is made visible again), the
completion records the target's workers keep (a record per delete the endpoint accepted, in a queue of
their own that only this control reads), and the jobs' queue's message counts. A job with a record is
done, one in the dead-letter queue dead; the rest are pending when the queue holds as many messages as
there are such jobs, else absent (the counts cannot say which are gone). Hence `shows_deliveries = False`:
a message out for delivery shows nowhere, and the suite counts a job drained by its accepted ack or its
dead letter. On real SQS the counts are approximate (they lag by up to a minute); on moto they are exact.
"""

from __future__ import annotations

import json
from typing import Any

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.errors import ConfigError
from chaos.queue_model import Job, JobState, KeepsNoCompletions
from chaos.worker.sqs import connect, queue_names

BATCH = 10  # SQS's most messages per receive, and per batch request
HIDE_S = 30  # how long the snapshot hides each message it receives while it reads the queue to its end
LONG_POLL_S = 1  # a receive's wait for messages when a short poll found none but the counts say some remain
COUNTS = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")


def lease_seconds(contract: Contract) -> int:
    """The contract's lease as SQS's visibility timeout: whole seconds, as SQS counts them."""
    lease = contract.lease_s
    if lease is None or lease != int(lease) or not 1 <= lease <= 43200:
        raise ConfigError(f"An SQS target's contract needs lease_s, its queue's visibility timeout, in whole "
                          f"seconds from 1 to 43200 (SQS's unit), but it has lease_s = {lease!r}. Fix the "
                          "[contract] table in target.toml (or the -c override).")
    return int(lease)


class SqsQueueControl(KeepsNoCompletions):
    shows_deliveries = False  # a received message shows nowhere until it is deleted or dead-lettered

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.params = params
        self.contract = contract
        self.visibility_s = lease_seconds(contract)
        self.names = queue_names(backend.namespace)
        self.client: Any = connect(backend.endpoint.url)
        self.urls: tuple[str, str, str] = ("", "", "")
        self.ids: dict[str, str] = {}  # suite job -> SQS message id
        self.done: dict[str, str] = {}  # suite job -> the token of the execution whose delete was accepted

    def setup(self) -> None:
        """The three queues (an external provider made them already: CreateQueue returns them), the
        visibility timeout and the redrive policy (maxReceiveCount = max_attempts)."""
        main, dead, done = (str(self.client.create_queue(QueueName=name)["QueueUrl"]) for name in self.names)
        self.urls = (main, dead, done)
        arn = self.client.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = {"deadLetterTargetArn": arn, "maxReceiveCount": str(self.contract.max_attempts or 1)}
        self.client.set_queue_attributes(QueueUrl=main, Attributes={
            "VisibilityTimeout": str(self.visibility_s), "RedrivePolicy": json.dumps(redrive)})

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            sent = self.client.send_message(QueueUrl=self.urls[0],
                                            MessageBody=json.dumps({"id": job.id, "payload": job.payload()}))
            self.ids[job.id] = str(sent["MessageId"])

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.names[0]}

    def snapshot(self) -> list[JobState]:
        self._read_completions()
        dead = self._dead_letters()
        counts = self.client.get_queue_attributes(QueueUrl=self.urls[0], AttributeNames=list(COUNTS))["Attributes"]
        held = sum(int(counts.get(name, 0)) for name in COUNTS)
        rest = [job for job in self.ids if job not in dead and job not in self.done]
        states = [JobState(job, "done", detail={"token": self.done[job]}) for job in self.ids if job in self.done]
        states += [JobState(job, "dead") for job in self.ids if job in dead]
        state = "pending" if held >= len(rest) else "absent"
        states += [JobState(job, state, detail={"queue_holds": held, "not_done_nor_dead": len(rest)}) for job in rest]
        return sorted(states, key=lambda s: s.job)

    def _read_completions(self) -> None:
        """Take every completion record (this control is their only reader: it keeps them, and deletes them)."""
        messages = self._receive_all(self.urls[2])
        for message in messages:
            record = json.loads(message["Body"])
            self.done.setdefault(str(record["id"]), str(record["token"]))
        for start in range(0, len(messages), BATCH):
            self.client.delete_message_batch(QueueUrl=self.urls[2], Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(messages[start:start + BATCH])])

    def _dead_letters(self) -> set[str]:
        """Every job in the dead-letter queue; each is visible there again after."""
        messages = self._receive_all(self.urls[1])
        for start in range(0, len(messages), BATCH):
            self.client.change_message_visibility_batch(QueueUrl=self.urls[1], Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for i, m in enumerate(messages[start:start + BATCH])])
        return {str(json.loads(m["Body"])["id"]) for m in messages}

    def _receive_all(self, url: str) -> list[dict[str, Any]]:
        """Every visible message of one of the control's own queues, each hidden for HIDE_S. A short poll
        samples only some of SQS's servers and may return nothing while messages exist: an empty one ends
        the read only if the queue's count of visible messages is 0 too, else a long poll has the last word
        (on moto the count is exact, so no snapshot waits out a long poll there)."""
        messages: list[dict[str, Any]] = []
        wait_s = 0
        while True:
            batch = self.client.receive_message(QueueUrl=url, MaxNumberOfMessages=BATCH, VisibilityTimeout=HIDE_S,
                                                WaitTimeSeconds=wait_s).get("Messages", [])
            messages += batch
            if batch:
                continue
            if wait_s or not self._visible(url):
                return messages
            wait_s = LONG_POLL_S

    def _visible(self, url: str) -> int:
        counts = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(counts["Attributes"].get("ApproximateNumberOfMessages", 0))

    def close(self) -> None:
        self.client.close()
