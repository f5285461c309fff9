"""The interesting windows a run reached, read from its ledger: where a queue's failure promises are put
to the test. An exploration that found nothing says which of them it reached and how often, so that
"nothing found" has a meaning; the search is steered toward longer exposures by the same reading."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chaos import events
from chaos.check.history import Execution, FaultHistory, RunHistory
from chaos.check.scan import scan
from chaos.events import Event
from chaos.explore.schedule import role, victim

# Each window, and what reaching it means.
WINDOWS = {
    "owner_died_before_effect": "an owner died holding a job it had claimed, before its effect",
    "owner_died_after_effect": "an owner died after its effect, before its ack",
    "owner_held_past_lease": "an owner was frozen or cut off, holding a job, for longer than its lease",
    "reclaimed_from_live_owner": "a job was claimed again while its previous owner was alive and had not let go",
    "stale_effect_attempted": "an owner made its effect after another worker had claimed the job",
    "stale_ack_attempted": "an owner acked after another worker had claimed the job",
    "stale_extension_attempted": "an owner extended its lease after another worker had claimed the job",
    "backend_restart_during_recovery": "the backend restarted while a job's owner was gone and the job not yet "
                                       "claimed again",
    "redelivered": "a job was claimed more than once",
}


@dataclass
class Reading:
    """What one run reached, and the measures the guided search maximises."""

    windows: set[str] = field(default_factory=set)
    overlap_s: float = 0.0  # the longest two executions of one job were both under way
    exposure_s: float = 0.0  # the longest an owner was held (frozen or cut off) while it held a job


def read(ledger: Sequence[Event], lease_s: float | None) -> Reading:
    run = scan(ledger)
    reading = Reading()
    for history in run.jobs.values():
        if len(history.executions) > 1:
            reading.windows.add("redelivered")
        for execution in history.executions:
            _execution_windows(run, execution, reading)
        _stale_probes(history.events, history.by_key, reading)
    for fault in run.faults.values():
        _fault_windows(run, fault, lease_s, reading)
    return reading


def _execution_windows(run: RunHistory, execution: Execution, reading: Reading) -> None:
    if execution.died_by is not None:
        reading.windows.add("owner_died_after_effect" if execution.last_effect else "owner_died_before_effect")
    successor = execution.superseded_by
    if successor is None:
        return
    if execution.died_by is None and (execution.end is None or execution.end.seq > successor.claim.seq):
        reading.windows.add("reclaimed_from_live_owner")
        end = execution.end.mono if execution.end is not None else _last(run)
        reading.overlap_s = max(reading.overlap_s, end - successor.at)
    if execution.late_beat is not None or execution.stale_extended:
        reading.windows.add("stale_extension_attempted")


def _stale_probes(job_events: list[Event], by_key: dict[tuple[str, object], Execution], reading: Reading) -> None:
    for event in job_events:
        if event.kind not in (events.PROBE_ACK, events.PROBE_EFFECT, events.PROBE_HEARTBEAT):
            continue
        execution = by_key.get((str(event.worker), event.data.get("token")))
        successor = execution.superseded_by if execution is not None else None
        if successor is not None and successor.claim.seq < event.seq:
            reading.windows.add({events.PROBE_ACK: "stale_ack_attempted", events.PROBE_EFFECT: "stale_effect_attempted",
                                 events.PROBE_HEARTBEAT: "stale_extension_attempted"}[event.kind])


def _fault_windows(run: RunHistory, fault: FaultHistory, lease_s: float | None, reading: Reading) -> None:
    if role(fault.kind) == "holds" and fault.applied is not None and fault.victims:
        held_s = (fault.healed.mono if fault.healed is not None else _last(run)) - fault.applied.mono
        reading.exposure_s = max(reading.exposure_s, held_s)
        if lease_s is not None and held_s > lease_s:
            reading.windows.add("owner_held_past_lease")
    restarts_server = role(fault.kind) == "restarts" and victim(fault.kind, "") == events.BACKEND
    if restarts_server and _recovery_pending(run, fault.seq):
        reading.windows.add("backend_restart_during_recovery")


def _recovery_pending(run: RunHistory, seq: int) -> bool:
    """Some job's owner had died (or lost it to a fault) before `seq`, and nobody had claimed it since."""
    for history in run.jobs.values():
        for execution in history.executions:
            died = execution.died_by
            if died is None or died.seq >= seq:
                continue
            successor = execution.superseded_by
            if successor is None or successor.claim.seq > seq:
                return True
    return False


def _last(run: RunHistory) -> float:
    ends = [e.mono for h in run.jobs.values() for e in h.events[-1:]]
    return max(ends, default=run.origin or 0.0)
