"""The target's control's word on completions its workers could not vouch for (`control.completion`).

A library that completes a job itself, after the handler returned and out of its sight, leaves the
worker reporting its ack with ok null. Where the control answered whether the queue took that completion
(`chaos.Control.completion`), the ack is judged as the control says, but only on a source that decides
an ack (`events.ACK_SOURCES`: the queue's record of whose ack completed the job, the broker's answer):
accepted is an accepted ack (so one from a superseded execution is `stale_ack_accepted`), refused a
refused one; unknown leaves the ack proving nothing either way, as a worker's own null does. Done (the
queue completed the job, but does not record by whose ack) leaves the ack unjudged too, and proves the
job completed; so does accepted from a result store, which records that the task ran to completion, not
that the queue took its ack (a stale owner's result is stored whether or not the broker refused its ack).
"""

from __future__ import annotations

from collections.abc import Sequence

from chaos import events
from chaos.events import Event

Key = tuple[str, str | None, str]  # (job, worker, token): the ack the answer is about
Answer = tuple[bool, str]  # whether the queue took the ack, and the source that says so
_OK = {"accepted": True, "refused": False}
_WORDS = {
    events.WORKER_REPORT: "the worker's report of the queue's answer to its ack",
    "broker": "the broker's answer to the ack, as the worker reported it",
    events.QUEUE_RECORD: "the queue's record of whose ack completed the job",
    "result-store": "a result store, which records that the task ran, not that its ack was taken",
}


def source_of(event: Event) -> str:
    """The source an ack probe or a control answer names; one that names none (a ledger from before sources)
    is the worker's report for a probe, the queue's record for a control answer."""
    default = events.QUEUE_RECORD if event.kind == events.COMPLETION else events.WORKER_REPORT
    return str(event.data.get("source") or default)


def evidence_words(source: str, via_control: bool = False) -> str:
    """What a message says its evidence was: the source, and whether the control read it."""
    words = _WORDS.get(source, source)
    return f"the control's answer, from {words}" if via_control else words


def answered(ledger: Sequence[Event]) -> dict[Key, Answer]:
    """Each ack the control answered definitely, from a source that decides acks: (True where the queue
    took the completion, else False; that source)."""
    return {(e.job, e.worker, str(e.data.get("token"))): (_OK[e.data["outcome"]], source_of(e)) for e in ledger
            if e.kind == events.COMPLETION and e.job is not None and e.data.get("outcome") in _OK
            and source_of(e) in events.ACK_SOURCES}


def done(ledger: Sequence[Event]) -> set[Key]:
    """Each ack about which the control answered that its job completed, without deciding the ack: the queue
    completed the job by this execution's ack or another's (done), or a result store holds this execution's
    result (accepted from a source that decides no ack). Evidence of the job's completion, none about the ack."""
    return {(e.job, e.worker, str(e.data.get("token"))) for e in ledger
            if e.kind == events.COMPLETION and e.job is not None
            and (e.data.get("outcome") == "done"
                 or (e.data.get("outcome") == "accepted" and source_of(e) not in events.ACK_SOURCES))}
