"""A claim after the queue accepted a completion of the same job (`claim_after_completion`).

At-least-once allows a redelivery when the ack was lost, refused or never sent; once the queue accepted a
completion, running the job again is a re-run of finished work under every delivery contract (unless the
contract says `rerun_after_completion = "allowed"`). The accepted completion is proven by the worker's
ack reported `ok` (or the control's answer that the queue took it), or by the queue's own record. Order
decides, never a race: by the probes, the claim must have been made after the accepted ack reached the
ledger (a claim the ledger records before that ack, or that a fault or the queue's record places before
it, raced the ack's answer and proves nothing); by the record, the claim must follow the completion in
the queue's own order of commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos import events
from chaos.check.history import JobHistory, RunHistory
from chaos.events import Event


@dataclass(frozen=True, slots=True)
class Rerun:
    """The accepted completion and the first claim made after it."""

    completion: Event
    claim: Event
    message: str
    detail: dict[str, Any]


def claim_after_completion(history: JobHistory, run: RunHistory) -> Rerun | None:
    """The first claim of the job made after a completion the queue accepted: by the probes, else by the
    queue's own record. None when there is none."""
    return _after_an_accepted_ack(history, run) or _after_a_recorded_completion(history, run)


def _after_an_accepted_ack(history: JobHistory, run: RunHistory) -> Rerun | None:
    """By the probes, the first claim by another execution made once the first accepted ack had arrived."""
    if not history.completions:
        return None
    ack = history.completions[0]  # the first completion the queue accepted
    acker = (ack.worker, ack.data.get("token"))
    for execution in history.executions:
        # `since` is the last seq before the claim was made (its report, or earlier where a fault or the
        # queue's record proves it): at or after the ack's, the claim was made once the ack was accepted.
        if execution.since < ack.seq or (execution.worker, execution.token) == acker:
            continue
        after = execution.at - ack.mono
        word = "by the control's answer" if ack.data.get("answered_by") == "control" else "by its worker's word"
        source = "control" if ack.data.get("answered_by") == "control" else "ack"
        return Rerun(ack, execution.claim,
                     f"{execution.who()} claimed it at {run.at(execution.claim)}, {after:.3f}s after the queue had "
                     f"accepted its completion: the ack of {run.labels.of_event(ack) or ack.worker} at "
                     f"{run.at(ack)}, accepted {word}. The queue ran a job it had completed again",
                     {"source": source, "completed_by": ack.worker, "completion_token": ack.data.get("token"),
                      "completion_seq": ack.seq, "claimer": execution.worker, "claimer_token": execution.token,
                      "claim_seq": execution.claim.seq, "after_s": round(after, 4)})
    return None


def _after_a_recorded_completion(history: JobHistory, run: RunHistory) -> Rerun | None:
    """In the queue's own order of commits, a claim that follows a completion it recorded."""
    record = sorted((e for e in history.events if e.kind in (events.QUEUE_COMPLETE, events.QUEUE_CLAIM)),
                    key=lambda e: e.data.get("order", 0))
    completion: Event | None = None
    for entry in record:
        if entry.kind == events.QUEUE_COMPLETE:
            completion = completion or entry
        elif completion is not None:
            after = entry.mono - completion.mono
            return Rerun(completion, entry,
                         f"the queue's own record shows a claim of it by {run.labels.of_record(entry)} (order "
                         f"{entry.data.get('order')}, journaled at {run.at(entry)}) after it recorded a completion "
                         f"of it by {run.labels.of_record(completion)} (order {completion.data.get('order')}, "
                         f"journaled at {run.at(completion)}). The queue ran a job it had completed again",
                         {"source": "queue", "completed_by": completion.worker,
                          "completion_token": completion.data.get("token"), "completion_seq": completion.seq,
                          "claimer": entry.worker, "claimer_token": entry.data.get("token"),
                          "claim_seq": entry.seq, "after_s": round(after, 4)})
    return None
