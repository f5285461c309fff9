"""Which event decided that a job left its owner: a fault is named as the cause only when nothing before it
shows the job already gone (judgement principle: the queue's own record first, then the probes).

A job may lose its owner before a fault reaches that owner: the queue's own sweep released or failed it
(its record, by the record's order of commits and its own timestamp), or the owner's lease extension was
refused with no later one accepted (its probes). Then the wait for a new owner starts there, the witness
starts there, and the fault that came after is not the cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos import events
from chaos.check.history import Execution, FaultHistory, JobHistory, RunHistory
from chaos.events import Event


@dataclass(frozen=True, slots=True)
class Cause:
    """The event after which the job had left its owner, and when that happened."""

    event: Event
    at: float  # as far as the ledger proves: a record's own timestamp, never later than its journal entry
    what: str  # how messages name it
    fault: FaultHistory  # the fault that came after it

    def came_after(self) -> str:
        """How a message says that the fault is not the cause."""
        return f"fault {self.fault.id} ({self.fault.kind} {self.fault.target}) came after that and is not the cause"


def earlier_loss(history: JobHistory, owner: Execution, fault: FaultHistory, run: RunHistory) -> Cause | None:
    """The first event before `fault` took `owner` that shows the job had already left it; None when the
    fault is the first."""
    applied = fault.applied or fault.journal
    if applied is None:
        return None
    found = [cause for cause in (_released_by_the_queue(history, owner, fault, run),
                                 _extension_refused(history, owner, fault, run))
             if cause is not None and cause.at < applied.mono]
    return min(found, key=lambda cause: cause.at, default=None)


def _released_by_the_queue(history: JobHistory, owner: Execution, fault: FaultHistory,
                           run: RunHistory) -> Cause | None:
    """The queue's record releasing or failing the job while, by its own order, `owner`'s worker held it
    (from a claim it recorded no later than the owner reported its own)."""
    names = {str(e.data["library_id"]): e.worker for e in history.events
             if e.kind.startswith(events.PROBE_PREFIX) and e.data.get("library_id")}
    record = sorted((e for e in history.events if e.kind in (events.QUEUE_CLAIM, events.QUEUE_RELEASE,
                                                             events.QUEUE_FAIL, events.QUEUE_COMPLETE)),
                    key=lambda e: e.data.get("order", 0))
    holder: str | None = None
    for entry in record:
        actor = names.get(entry.worker or "", entry.worker)
        if entry.kind == events.QUEUE_CLAIM:
            holder = actor if recorded_at(entry) <= owner.claim.mono else None
        elif entry.kind != events.QUEUE_COMPLETE and holder == owner.worker:
            how = "released" if entry.kind == events.QUEUE_RELEASE else "recorded failed"
            at = recorded_at(entry)
            return Cause(entry, at, f"the queue's own record took it from its owner {owner.worker} ({entry.kind}: "
                                    f"{how}, order {entry.data.get('order')}, at +{at - (run.origin or 0.0):.3f}s)",
                         fault)
        else:
            holder = None  # completed, or released from another holder
    return None


def _extension_refused(history: JobHistory, owner: Execution, fault: FaultHistory, run: RunHistory) -> Cause | None:
    """The owner's first refused lease extension reported before the fault, with none accepted after it."""
    refused: Event | None = None
    for event in history.events:
        if event.seq >= fault.seq:
            break
        if (event.kind != events.PROBE_HEARTBEAT or event.seq < owner.claim.seq or event.worker != owner.worker
                or event.data.get("token") != owner.token):
            continue
        if event.data.get("ok") is False:
            refused = refused or event
        elif event.data.get("ok"):
            refused = None
    if refused is None:
        return None
    return Cause(refused, refused.mono, f"its owner {owner.who()} reported its lease extension refused (at "
                                        f"{run.at(refused)})", fault)


def recorded_at(entry: Event) -> float:
    """When the queue committed a record entry, on the ledger's clock: its own timestamp (epoch seconds,
    moved onto the ledger's monotonic clock by the entry's journal), never later than its journal entry."""
    at = entry.data.get("at")
    if isinstance(at, bool) or not isinstance(at, (int, float)):
        return entry.mono
    return min(entry.mono, float(at) - (entry.wall - entry.mono))
