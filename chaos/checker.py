"""The checker: a pure function of the ledger and the contract, as Jepsen's checkers are of the history.

It never imports fault or process code, and it never crashes into a pass: `judge` turns any exception
raised while checking into an `error` verdict carrying the traceback.
"""

from __future__ import annotations

import statistics
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.contract import Contract
from chaos.ledger import Event
from chaos.verdict import OUTCOMES, FaultReport, Verdict, Violation

OWNER_LOSING_FAULTS = ("kill", "stop", "restart")
WITNESS_LIMIT = 200


@dataclass
class JobHistory:
    """What the ledger says about one job, gathered in a single pass."""

    job: str
    enqueued: bool = False
    events: list[Event] = field(default_factory=list)
    effects: list[Event] = field(default_factory=list)
    workers: set[str] = field(default_factory=set)
    owner: str | None = None
    lost_owner_at: float | None = None
    recoveries: list[float] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None


@dataclass
class FaultHistory:
    id: str
    kind: str
    target: str | None
    gate: str | None
    seq: int
    applied: Event | None = None


@dataclass
class Pass:
    """Mutable state of the single pass over the ledger."""

    jobs: dict[str, JobHistory] = field(default_factory=dict)
    owned: dict[str, set[str]] = field(default_factory=dict)
    faults: dict[str, FaultHistory] = field(default_factory=dict)
    gate_matched: dict[str, int] = field(default_factory=dict)
    gates_armed: dict[str, str] = field(default_factory=dict)
    exits: dict[str, list[Event]] = field(default_factory=dict)
    context: dict[str, list[Event]] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    snapshot_taken: bool = False
    origin: float | None = None

    def job(self, job: str) -> JobHistory:
        history = self.jobs.get(job)
        if history is None:
            history = self.jobs[job] = JobHistory(job)
        return history


def judge(events: Sequence[Event], contract: Contract | None = None) -> Verdict:
    """Check a ledger; any exception becomes an `error` verdict, never a pass."""
    try:
        return check(events, contract)
    except Exception:  # noqa: BLE001 - the whole point is to turn every crash into a verdict
        run = next((e.data for e in events if e.kind == "run.start"), {})
        return Verdict("error", str(run.get("target", "?")), str(run.get("scenario", "?")), run.get("seed"),
                       dict(run.get("contract", {})), {}, {}, [], [], {}, str(run.get("command", "")),
                       error=traceback.format_exc())


def check(events: Sequence[Event], contract: Contract | None = None) -> Verdict:
    state = _scan(events)
    if contract is None:
        contract = Contract.from_dict(dict(state.run.get("contract", {})), "ledger run.start")
    violations: list[Violation] = []
    outcomes: dict[str, str] = {}
    for job in sorted(state.jobs):
        history = state.jobs[job]
        outcome, found = _judge_job(history, contract, state)
        outcomes[job] = outcome
        violations += found
    faults = _fault_reports(state)
    notes: list[str] = []
    recovery = _recovery_summary(state)
    verdict = "pass"
    if violations:
        verdict = "fail"
    elif not state.snapshot_taken:
        verdict = "inconclusive"
        notes.append("the run ended before the final snapshot: lost and stuck jobs cannot be judged")
    elif any(not f.exercised for f in faults) or len(state.gate_matched) < len(state.gates_armed):
        verdict = "inconclusive"
        notes.append("fault not exercised: a gate never matched or a fault never took effect")
    if state.end and state.end.get("status") not in (None, "ok") and verdict == "pass":
        verdict = "inconclusive"
        notes.append(f"the harness reported: {state.end.get('status')}: {state.end.get('detail', '')}")
    counts = {"enqueued": sum(1 for h in state.jobs.values() if h.enqueued)}
    counts.update({name: sum(1 for o in outcomes.values() if o == name) for name in OUTCOMES})
    counts["effects"] = sum(len(h.effects) for h in state.jobs.values())
    run = state.run
    return Verdict(verdict, str(run.get("target", "?")), str(run.get("scenario", "?")), run.get("seed"),
                   contract.to_dict(), counts, outcomes, faults, violations, recovery,
                   str(run.get("command", "")), notes)


def _scan(events: Iterable[Event]) -> Pass:
    state = Pass()
    for event in events:
        if state.origin is None:
            state.origin = event.mono
        kind = event.kind
        if event.job is not None and not kind.startswith("gate."):
            _on_job_event(state, state.job(event.job), event)
        elif kind == "fault":
            state.faults[event.data["id"]] = FaultHistory(event.data["id"], event.data["kind"],
                                                          event.data.get("target"), event.data.get("gate"), event.seq)
            _add_context(state, event)
        elif kind == "fault.applied":
            _on_fault_applied(state, event)
            _add_context(state, event)
        elif kind.startswith(("process.", "fault.", "backend.")):
            if kind == "process.exit" and event.worker:
                state.exits.setdefault(event.worker, []).append(event)
            _add_context(state, event)
        elif kind == "gate.armed":
            state.gates_armed[event.data["gate"]] = event.data.get("spec", "")
        elif kind == "gate.matched":
            state.gate_matched.setdefault(event.data["gate"], event.seq)
            if event.job is not None:
                state.job(event.job).events.append(event)
        elif kind == "run.start":
            state.run = event.data
        elif kind == "run.end":
            state.end = event.data
        elif kind == "snapshot.taken":
            state.snapshot_taken = True
    return state


def _on_job_event(state: Pass, history: JobHistory, event: Event) -> None:
    kind = event.kind
    history.events.append(event)
    if kind == "enqueue":
        history.enqueued = True
    elif kind == "probe.claim":
        _on_claim(state, history, event)
    elif kind == "probe.effect":
        if event.data.get("accepted", True):
            history.effects.append(event)
    elif kind in ("probe.ack", "probe.abandon"):
        if kind == "probe.abandon" or event.data.get("ok"):
            _release(state, history, event.worker)
    elif kind == "snapshot":
        history.snapshot = event.data


def _add_context(state: Pass, event: Event) -> None:
    key = event.worker or event.data.get("target") or "*"
    state.context.setdefault(key, []).append(event)


def _on_claim(state: Pass, history: JobHistory, event: Event) -> None:
    worker = event.worker or "?"
    if history.lost_owner_at is not None:
        history.recoveries.append(event.mono - history.lost_owner_at)
        history.lost_owner_at = None
    if history.owner is not None:
        state.owned.get(history.owner, set()).discard(history.job)
    history.owner = worker
    history.workers.add(worker)
    state.owned.setdefault(worker, set()).add(history.job)


def _release(state: Pass, history: JobHistory, worker: str | None) -> None:
    if worker is not None and history.owner == worker:
        state.owned.get(worker, set()).discard(history.job)
        history.owner = None


def _on_fault_applied(state: Pass, event: Event) -> None:
    fault = state.faults.get(event.data["id"])
    if fault is None:
        return
    fault.applied = event
    if fault.kind in OWNER_LOSING_FAULTS and fault.target:
        for job in state.owned.get(fault.target, set()):
            history = state.jobs[job]
            if history.lost_owner_at is None:
                history.lost_owner_at = event.mono


def _judge_job(history: JobHistory, contract: Contract, state: Pass) -> tuple[str, list[Violation]]:
    def violation(kind: str, message: str) -> Violation:
        return Violation(kind, history.job, message, _witness(history, state))

    effects = len(history.effects)
    snap = history.snapshot or {}
    where = snap.get("state", "absent")
    if not history.enqueued:
        return "unexpected", [violation("unexpected", f"{effects} effect(s) for a job that was never enqueued")]
    if not state.snapshot_taken:
        return "unknown", []
    if where == "dead":
        return "dead_lettered", []
    if where in ("pending", "claimed"):
        owner = f", claimed by {snap['owner']}" if snap.get("owner") else ""
        return "stuck", [violation("stuck", f"still {where}{owner} at the end of the run, past the recovery "
                                            f"bound of {contract.recovery_bound_s}s, after {effects} effect(s)")]
    if effects == 0:
        return "lost", [violation("lost", f"enqueued but never effected, and the queue reports it {where}")]
    if effects == 1:
        return "completed", []
    found: list[Violation] = []
    if contract.delivery != "at-least-once":
        found.append(violation("redelivered", f"{effects} effects under a {contract.delivery} contract"))
    return "redelivered", found


def _witness(history: JobHistory, state: Pass) -> list[dict[str, Any]]:
    """The job's events plus the faults and process events of every worker that touched it."""
    related = list(history.events)
    for worker in history.workers:
        related += state.context.get(worker, [])
    related.sort(key=lambda e: e.seq)
    origin = state.origin or 0.0
    return [{"seq": e.seq, "t": round(e.mono - origin, 4), "kind": e.kind, "job": e.job, "worker": e.worker,
             "data": e.data} for e in related[-WITNESS_LIMIT:]]


def _fault_reports(state: Pass) -> list[FaultReport]:
    reports = []
    for fault in state.faults.values():
        exercised, why = _exercised(fault, state)
        reports.append(FaultReport(fault.id, fault.kind, fault.target, exercised, why, fault.gate))
    return reports


def _exercised(fault: FaultHistory, state: Pass) -> tuple[bool, str]:
    """A fault counts only when the ledger proves it landed where the scenario aimed it."""
    if fault.applied is None:
        return False, "journaled but never applied"
    if fault.gate is not None and state.gate_matched.get(fault.gate, fault.seq) >= fault.seq:
        return False, f"gate {fault.gate} had not matched when the fault was applied"
    if fault.kind in ("kill", "stop") and not fault.applied.data.get("pids"):
        return False, "no live process of the target received the signal"
    if fault.kind == "kill":
        exits = [e for e in state.exits.get(fault.target or "", []) if e.seq > fault.applied.seq]
        if not any(e.data.get("signal") == "SIGKILL" for e in exits):
            return False, f"no SIGKILL exit of {fault.target} was reaped after the fault"
        return True, f"{fault.target} killed by SIGKILL (pids {fault.applied.data['pids']})"
    return True, str(fault.applied.data.get("detail", "applied"))


def _recovery_summary(state: Pass) -> dict[str, Any]:
    per_job = {job: [round(r, 4) for r in h.recoveries] for job, h in state.jobs.items() if h.recoveries}
    times = [r for values in per_job.values() for r in values]
    if not times:
        return {"jobs": {}}
    return {"jobs": per_job, "min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4)}
