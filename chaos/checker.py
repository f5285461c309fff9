"""The checker: a pure function of the ledger and the contract, as Jepsen's checkers are of the history.

It never imports fault or process code, and it never crashes into a pass: `judge` turns any exception
raised while checking into an `error` verdict carrying the traceback.

Model. An *execution* is one `probe.claim` of a job by (worker, token). It ends at that token's ack
(accepted or not) or abandon, at the exit of its worker process, or when a kill or restart fault is
applied to its worker. A SIGSTOP does not end it: a stopped owner resumes and keeps working. A new
claim of the job *supersedes* the job's previous execution (ownership moved on), whether or not that
execution had ended. From that model, in one pass plus per-job work:

- `overlapped`: two executions that each made an accepted effect and whose [claim, end) intervals
  intersect; `redelivered`: several effects, executions one after another.
- `premature_reclaim`: a claim while the job's current owner had not ended, its process alive, and
  no kill/stop/restart applied to it since its claim, no clock fault on it, no backend restart since.
- `stale_ack_accepted`: an accepted ack by an execution that had been superseded.
- `effect_after_lease_loss`: an accepted effect by a superseded execution; exposure = effect time -
  the superseding claim's time.
- recovery: a kill, stop or restart applied to the owner's worker (or a backend restart while the job
  was owned) loses the owner; recovery = next claim - the fault's applied time (0 when the claim landed
  between the fault's journal entry and its applied record). An owner that survives its fault and acks
  the job successfully needs no recovery. A recovery past contract.recovery_bound_s is a violation.
- dead letters: a job ending dead after a number of claims != contract.max_attempts (when set), or a
  job enqueued with fail=false ending dead, is a `dead_lettered` violation.

Event-proven anomalies (premature reclaim, stale ack, effect after lease loss, recovery bound) are judged
even when the final snapshot is missing; outcome-based ones (lost, stuck, redelivered, overlapped, dead
letters) need the snapshot, as before. Allowed anomalies (a late effect under after-lease-loss +
at-least-once, a stale ack under stale_ack = accepted) go to `Verdict.anomalies`.
"""

from __future__ import annotations

import bisect
import gc
import statistics
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.contract import Contract
from chaos.ledger import Event
from chaos.verdict import OUTCOMES, FaultReport, Verdict, Violation

OWNER_LOSING_FAULTS = ("kill", "stop", "restart")
ENDING_FAULTS = ("kill", "restart")  # the process is gone: its executions end
BACKEND = "backend"
GLOBAL = "*"
CLOCK_TOLERANCE_S = 5.0
WITNESS_LIMIT = 200


class Execution:
    """One claim of a job by (worker, token), until its ack, abandon, process exit or kill.
    Compared and hashed by identity."""

    __slots__ = ("job", "worker", "token", "pid", "claim", "end", "ended_by", "effects", "superseded_by")

    def __init__(self, job: str, worker: str, token: Any, pid: Any, claim: Event) -> None:
        self.job = job
        self.worker = worker
        self.token = token
        self.pid = pid
        self.claim = claim
        self.end: Event | None = None
        self.ended_by: str | None = None
        self.effects = 0
        self.superseded_by: Execution | None = None  # the next claim of the job (ownership moved on)

    def who(self) -> str:
        return f"{self.worker} (token {self.token})" if self.token is not None else f"{self.worker} (no token)"


@dataclass(slots=True)
class Finding:
    """An anomaly proven by the events alone; the contract decides later whether it is a violation."""

    kind: str
    seq: int
    message: str
    exposure_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Recovery:
    seconds: float
    fault: str
    owner: str
    by: str
    claim_seq: int  # the claim that recovered the job


class JobHistory:
    """What the ledger says about one job, gathered in a single pass (a plain slotted class: one is
    built per job, on the hot path)."""

    __slots__ = ("job", "enqueued", "poison", "events", "effects", "executions", "by_key", "latest",
                 "lost_owner_at", "lost", "recoveries", "findings", "snapshot")

    def __init__(self, job: str) -> None:
        self.job = job
        self.enqueued = False
        self.poison: bool | None = None  # enqueue data `fail`; None when the ledger does not say
        self.events: list[Event] = []
        self.effects: list[Event] = []
        self.executions: list[Execution] = []  # in claim order
        self.by_key: dict[tuple[str, Any], Execution] = {}  # (worker, token) -> its latest execution
        self.latest: Execution | None = None  # the job's current owner (its latest claim)
        self.lost_owner_at: float | None = None
        self.lost: tuple[str, str] | None = None  # (fault id, owner) of the pending loss
        self.recoveries: list[Recovery] = []
        self.findings: list[Finding] = []
        self.snapshot: dict[str, Any] | None = None

    def workers(self) -> set[str]:
        return {e.worker for e in self.events if e.worker is not None}


@dataclass(slots=True)
class FaultHistory:
    id: str
    kind: str
    target: str | None
    gate: str | None
    seq: int
    data: dict[str, Any] = field(default_factory=dict)
    applied: Event | None = None
    healed: Event | None = None
    victims: list[Execution] = field(default_factory=list)
    clock_seen: bool = False  # a probe of the target showed the shifted clock
    clock_skew: float | None = None  # last skew observed on the target's probes


@dataclass
class Pass:
    """Mutable state of the single pass over the ledger."""

    jobs: dict[str, JobHistory] = field(default_factory=dict)
    open: dict[str, set[Execution]] = field(default_factory=dict)  # worker -> its unended executions
    faults: dict[str, FaultHistory] = field(default_factory=dict)
    gate_matched: dict[str, int] = field(default_factory=dict)
    gates_armed: dict[str, str] = field(default_factory=dict)
    exits: dict[str, list[Event]] = field(default_factory=dict)
    starts: dict[str, list[Event]] = field(default_factory=dict)
    backend_restarts: list[Event] = field(default_factory=list)
    owner_faulted: dict[str, int] = field(default_factory=dict)  # worker -> seq of its last kill/stop/restart
    backend_restarted: int = -1  # seq of the last backend restart (event or applied fault)
    clock_faults: dict[str, list[FaultHistory]] = field(default_factory=dict)
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

    def at(self, event: Event) -> str:
        return f"+{event.mono - (self.origin or 0.0):.3f}s"


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
    # The pass allocates a few long-lived objects per event; the cyclic collector would rescan that
    # growing heap again and again (more than doubling the time on a million events), and none of it
    # is cyclic garbage. Pause it for the duration, restoring whatever the caller had.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(events, contract)
    finally:
        if collecting:
            gc.enable()


def _check(events: Sequence[Event], contract: Contract | None) -> Verdict:
    state = _scan(events)
    if contract is None:
        contract = Contract.from_dict(dict(state.run.get("contract", {})), "ledger run.start")
    violations: list[Violation] = []
    anomalies: list[dict[str, Any]] = []
    outcomes: dict[str, str] = {}
    for job in sorted(state.jobs):
        outcome, found, allowed = _judge_job(state.jobs[job], contract, state)
        outcomes[job] = outcome
        violations += found
        anomalies += allowed
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
    tally = Counter(outcomes.values())
    counts.update({name: tally[name] for name in OUTCOMES})
    counts["effects"] = sum(len(h.effects) for h in state.jobs.values())
    run = state.run
    return Verdict(verdict, str(run.get("target", "?")), str(run.get("scenario", "?")), run.get("seed"),
                   contract.to_dict(), counts, outcomes, faults, violations, recovery,
                   str(run.get("command", "")), notes, anomalies=anomalies)


# -- the single pass -----------------------------------------------------------------------------


def _scan(events: Iterable[Event]) -> Pass:
    state = Pass()
    jobs = state.jobs
    clock_faults = state.clock_faults
    for event in events:
        if state.origin is None:
            state.origin = event.mono
        kind = event.kind
        job = event.job
        if job is not None and not kind.startswith("gate."):  # the hot path: probes, enqueues, snapshots
            history = jobs.get(job)
            if history is None:
                history = jobs[job] = JobHistory(job)
            history.events.append(event)
            handler = _JOB_HANDLERS.get(kind)
            if handler is not None:
                handler(state, history, event)
            if clock_faults and event.worker in clock_faults and kind.startswith("probe."):
                _on_probe_clock(clock_faults[event.worker], event)
        elif kind == "fault":
            _on_fault(state, event)
            _add_context(state, event)
        elif kind == "fault.applied":
            _on_fault_applied(state, event)
            _add_context(state, event)
        elif kind.startswith(("process.", "fault.", "backend.")):
            _on_process_or_backend(state, event)
            _add_context(state, event)
        elif kind == "gate.armed":
            state.gates_armed[event.data["gate"]] = event.data.get("spec", "")
        elif kind == "gate.matched":
            state.gate_matched.setdefault(event.data["gate"], event.seq)
            if job is not None:
                state.job(job).events.append(event)
        elif kind == "run.start":
            state.run = event.data
        elif kind == "run.end":
            state.end = event.data
        elif kind == "snapshot.taken":
            state.snapshot_taken = True
    return state


def _on_enqueue(state: Pass, history: JobHistory, event: Event) -> None:
    history.enqueued = True
    fail = event.data.get("fail")
    history.poison = None if fail is None else bool(fail)


def _on_snapshot(state: Pass, history: JobHistory, event: Event) -> None:
    history.snapshot = event.data


def _on_abandon(state: Pass, history: JobHistory, event: Event) -> None:
    execution = _execution(history, event)
    if execution is not None:
        _end(state, execution, event, "abandon")


def _add_context(state: Pass, event: Event) -> None:
    key = event.worker or event.data.get("target") or GLOBAL
    state.context.setdefault(key, []).append(event)


def _execution(history: JobHistory, event: Event) -> Execution | None:
    """The execution a probe belongs to: by (worker, token), else that worker's latest claim of the job."""
    worker = event.worker or "?"
    token = event.data.get("token")
    latest = history.latest
    if latest is not None and latest.worker == worker and (token is None or latest.token == token):
        return latest  # the common case
    if token is not None:
        execution = history.by_key.get((worker, token))
        if execution is not None:
            return execution
    for execution in reversed(history.executions):  # no token, or one never claimed: rare
        if execution.worker == worker:
            return execution
    return None


def _end(state: Pass, execution: Execution, event: Event, how: str) -> None:
    if execution.end is None:
        execution.end = event
        execution.ended_by = how
        owned = state.open.get(execution.worker)
        if owned is not None:
            owned.discard(execution)


def _on_claim(state: Pass, history: JobHistory, event: Event) -> None:
    worker = event.worker or "?"
    token = event.data.get("token")
    execution = Execution(history.job, worker, token, event.data.get("pid"), event)
    previous = history.latest
    if previous is not None:
        if previous.worker == worker and previous.token == token:
            _end(state, previous, event, "reclaim")  # the same claim again: not a competitor
        else:
            previous.superseded_by = execution
            if previous.end is None and not _owner_faulted(state, previous):
                held = event.mono - previous.claim.mono
                history.findings.append(Finding(
                    "premature_reclaim", event.seq,
                    f"{execution.who()} claimed it at {state.at(event)} while {previous.who()} still owned it: "
                    f"{previous.worker} had held it for {held:.3f}s (since {state.at(previous.claim)}), its "
                    "process alive and unfaulted (no kill, stop or restart of it since its claim, no clock "
                    "fault on it, no backend restart since its claim)",
                    detail={"claimer": worker, "claimer_token": token, "owner": previous.worker,
                            "owner_token": previous.token, "held_s": round(held, 4)}))
    if history.lost_owner_at is not None:
        fault, owner = history.lost or ("?", "?")
        history.recoveries.append(Recovery(event.mono - history.lost_owner_at, fault, owner, worker, event.seq))
        history.lost_owner_at = None
        history.lost = None
    history.latest = execution
    history.executions.append(execution)
    history.by_key[(worker, token)] = execution
    owned = state.open.get(worker)
    if owned is None:
        owned = state.open[worker] = set()
    owned.add(execution)


def _owner_faulted(state: Pass, execution: Execution) -> bool:
    """Was the owner stopped, killed, restarted, clock-shifted, or its backend restarted since its claim?"""
    since = execution.claim.seq
    return (state.owner_faulted.get(execution.worker, -1) > since or execution.worker in state.clock_faults
            or state.backend_restarted > since)


def _on_effect(state: Pass, history: JobHistory, event: Event) -> None:
    if not event.data.get("accepted", True):
        return
    history.effects.append(event)
    execution = _execution(history, event)
    if execution is None:
        return
    execution.effects += 1
    winner = execution.superseded_by
    if winner is not None:
        exposure = event.mono - winner.claim.mono
        history.findings.append(Finding(
            "effect_after_lease_loss", event.seq,
            f"{execution.who()} made an accepted effect {exposure:.3f}s after {winner.who()} had claimed the job "
            f"(claimed at {state.at(winner.claim)}, effect at {state.at(event)})",
            exposure, {"worker": execution.worker, "token": execution.token, "claimer": winner.worker,
                       "claimer_token": winner.token, "exposure_s": round(exposure, 4)}))


def _on_ack(state: Pass, history: JobHistory, event: Event) -> None:
    execution = _execution(history, event)
    if execution is None:
        return
    if event.data.get("ok"):
        owner = history.latest
        if owner is not None and owner is not execution:
            winner = execution.superseded_by or owner
            exposure = event.mono - winner.claim.mono
            history.findings.append(Finding(
                "stale_ack_accepted", event.seq,
                f"{execution.who()} acknowledged it successfully at {state.at(event)} although {owner.who()} "
                f"had claimed it since (at {state.at(owner.claim)}): the queue accepted an ack from a claim it "
                "no longer held", exposure,
                {"worker": execution.worker, "token": execution.token, "owner": owner.worker,
                 "owner_token": owner.token, "exposure_s": round(exposure, 4)}))
        elif owner is execution:
            history.lost_owner_at = None  # the owner survived its fault and completed the job
            history.lost = None
    _end(state, execution, event, "ack")


def _on_probe_clock(faults: list[FaultHistory], event: Event) -> None:
    clock = event.data["clock"]
    if isinstance(clock, bool) or not isinstance(clock, (int, float)):
        return
    skew = clock - event.wall
    for fault in faults:
        fault.clock_skew = skew
        offset = fault.data.get("offset_s") or 0.0
        if abs(skew - offset) < CLOCK_TOLERANCE_S:
            fault.clock_seen = True


_JOB_HANDLERS: dict[str, Callable[[Pass, JobHistory, Event], None]] = {
    "probe.claim": _on_claim, "probe.effect": _on_effect, "probe.ack": _on_ack, "probe.abandon": _on_abandon,
    "enqueue": _on_enqueue, "snapshot": _on_snapshot,
}


def _on_fault(state: Pass, event: Event) -> None:
    data = event.data
    fault = state.faults[data["id"]] = FaultHistory(data["id"], data["kind"], data.get("target"), data.get("gate"),
                                                    event.seq, data)
    # A fault is under way from its journal entry on: a reclaim while it is being applied (a server
    # going down ends its sessions before restart() returns) is a consequence of it, never premature.
    if fault.kind in OWNER_LOSING_FAULTS and fault.target:
        fault.victims = list(state.open.get(fault.target, ()))
        state.owner_faulted[fault.target] = event.seq
    elif fault.kind == "backend_restart":
        fault.victims = [e for owned in state.open.values() for e in owned]
        state.backend_restarted = max(state.backend_restarted, event.seq)
    elif fault.kind == "clock" and fault.target:
        state.clock_faults.setdefault(fault.target, []).append(fault)


def _on_fault_applied(state: Pass, event: Event) -> None:
    fault = state.faults.get(event.data["id"])
    if fault is None:
        return
    fault.applied = event
    if fault.kind in OWNER_LOSING_FAULTS and fault.target:
        state.owner_faulted[fault.target] = event.seq
        # executions open at the journal entry, plus any claimed between the journal and the application
        owned = state.open.get(fault.target, set())
        fault.victims += [e for e in owned if e.claim.seq > fault.seq]
        _lose_owners(state, fault, event)
        if fault.kind in ENDING_FAULTS:
            for execution in list(owned):
                _end(state, execution, event, "fault")
    elif fault.kind == "backend_restart":
        state.backend_restarted = max(state.backend_restarted, event.seq)
        fault.victims += [e for owned in state.open.values() for e in owned if e.claim.seq > fault.seq]
        _lose_owners(state, fault, event)


def _lose_owners(state: Pass, fault: FaultHistory, applied: Event) -> None:
    """Each job whose owner this fault took starts its recovery clock at the fault's applied time."""
    for execution in fault.victims:
        history = state.jobs[execution.job]
        if history.latest is execution:
            if execution.ended_by != "ack" and history.lost_owner_at is None:
                history.lost_owner_at = applied.mono
                history.lost = (fault.id, execution.worker)
        elif execution.superseded_by is not None and execution.superseded_by.claim.seq > fault.seq:
            # reclaimed between the fault's journal entry and its application record: recovered at once
            # (unless that claim already closed the recovery of an earlier fault)
            winner = execution.superseded_by
            if not any(r.claim_seq == winner.claim.seq for r in history.recoveries[-1:]):
                history.recoveries.append(Recovery(max(0.0, winner.claim.mono - applied.mono), fault.id,
                                                   execution.worker, winner.worker, winner.claim.seq))


def _on_process_or_backend(state: Pass, event: Event) -> None:
    kind = event.kind
    worker = event.worker
    if kind == "process.exit" and worker:
        state.exits.setdefault(worker, []).append(event)
        _on_exit(state, worker, event)
    elif kind == "process.start" and worker:
        state.starts.setdefault(worker, []).append(event)
    elif kind == "fault.healed":
        fault = state.faults.get(event.data.get("id", ""))
        if fault is not None:
            fault.healed = event
    elif kind == "backend.restart":
        state.backend_restarts.append(event)
        state.backend_restarted = max(state.backend_restarted, event.seq)


def _on_exit(state: Pass, worker: str, event: Event) -> None:
    """A process exit ends the executions it ran: all of the worker's when it was its current process."""
    owned = state.open.get(worker)
    if not owned:
        return
    pid = event.data.get("pid")
    starts = state.starts.get(worker)
    current = starts[-1] if starts else None
    if current is None or pid is None or current.data.get("pid") == pid:
        ended = list(owned)
    else:  # an older incarnation: only what it claimed (or anything claimed before the current one started)
        ended = [e for e in owned if e.pid == pid or e.claim.seq < current.seq]
    for execution in ended:
        _end(state, execution, event, "exit")


# -- per-job judgement ---------------------------------------------------------------------------


def _judge_job(history: JobHistory, contract: Contract,
               state: Pass) -> tuple[str, list[Violation], list[dict[str, Any]]]:
    outcome, reason = _outcome(history, contract, state)
    if not reason and not history.findings and not history.recoveries:
        return outcome, [], []  # the common case
    witness: list[dict[str, Any]] | None = None

    def violation(kind: str, message: str, detail: dict[str, Any] | None = None) -> Violation:
        nonlocal witness
        if witness is None:
            witness = _witness(history, state)
        return Violation(kind, history.job, message, witness, dict(detail or {}))

    found = [violation(outcome, reason)] if reason else []
    allowed: list[dict[str, Any]] = []
    for finding in history.findings:
        if _allowed(finding.kind, contract):
            allowed.append({"kind": finding.kind, "job": history.job, "exposure_s": _round(finding.exposure_s),
                            "message": f"{finding.message} ({_allowed_by(finding.kind, contract)})"})
        else:
            found.append(violation(finding.kind, f"{finding.message}{_forbidden_by(finding.kind, contract)}",
                                   finding.detail))
    bound = contract.recovery_bound_s
    for recovery in history.recoveries:
        if recovery.seconds > bound:
            fault = state.faults.get(recovery.fault)
            what = f"{fault.kind} {fault.target}" if fault is not None else "?"
            found.append(violation(
                "recovery_bound_exceeded",
                f"reclaimed by {recovery.by} {recovery.seconds:.3f}s after fault {recovery.fault} ({what}) took its "
                f"owner {recovery.owner}, past the recovery bound of {bound}s",
                {"recovery_s": round(recovery.seconds, 4), "bound_s": bound, "fault": recovery.fault,
                 "owner": recovery.owner, "by": recovery.by}))
    return outcome, found, allowed


def _allowed(kind: str, contract: Contract) -> bool:
    if kind == "stale_ack_accepted":
        return contract.stale_ack == "accepted"
    if kind == "effect_after_lease_loss":
        return contract.overlap == "after-lease-loss" and contract.delivery == "at-least-once"
    return False  # premature_reclaim: a queue that reclaims from a live, healthy owner breaks its own ownership


def _allowed_by(kind: str, contract: Contract) -> str:
    if kind == "stale_ack_accepted":
        return "allowed: stale_ack = accepted"
    return f"allowed: overlap = {contract.overlap}, delivery = {contract.delivery}"


def _forbidden_by(kind: str, contract: Contract) -> str:
    if kind == "stale_ack_accepted":
        return f"; the contract says stale_ack = {contract.stale_ack}"
    if kind == "effect_after_lease_loss":
        return f"; the contract says overlap = {contract.overlap}, delivery = {contract.delivery}"
    return ""


def _outcome(history: JobHistory, contract: Contract, state: Pass) -> tuple[str, str]:
    """The job's outcome and, when the contract forbids it, why (empty when it is fine)."""
    effects = len(history.effects)
    snap = history.snapshot or {}
    where = snap.get("state", "absent")
    if not history.enqueued:
        return "unexpected", f"{effects} effect(s) for a job that was never enqueued"
    if not state.snapshot_taken:
        return "unknown", ""
    if where == "dead":
        return "dead_lettered", _dead_letter_reason(history, contract, snap)
    if where in ("pending", "claimed"):
        owner = f", claimed by {snap['owner']}" if snap.get("owner") else ""
        return "stuck", (f"still {where}{owner} at the end of the run, past the recovery bound of "
                         f"{contract.recovery_bound_s}s, after {effects} effect(s)")
    if effects == 0:
        return "lost", f"enqueued but never effected, and the queue reports it {where}"
    if effects == 1:
        return "completed", ""
    overlap = _overlap(history)
    if overlap is not None:
        first, second = overlap
        until = (f"until {first.ended_by} at {state.at(first.end)}" if first.end is not None
                 else "and never ended")
        reasons = []
        if contract.overlap == "never":
            reasons.append("the contract says overlap = never")
        if contract.delivery != "at-least-once":
            reasons.append(f"{effects} effects under a {contract.delivery} contract")
        if not reasons:
            return "overlapped", ""
        return "overlapped", (f"{effects} effects from executions that ran at once: {second.who()} claimed it at "
                              f"{state.at(second.claim)} while {first.who()} (claimed at {state.at(first.claim)}) "
                              f"was still executing it, {until}; " + "; ".join(reasons))
    if contract.delivery != "at-least-once":
        return "redelivered", f"{effects} effects under a {contract.delivery} contract"
    return "redelivered", ""


def _overlap(history: JobHistory) -> tuple[Execution, Execution] | None:
    """Two effecting executions whose [claim, end) intervals intersect, or None (a sweep in claim order)."""
    reach: Execution | None = None  # the effecting execution that ends last so far
    for execution in history.executions:  # in claim order
        if not execution.effects:
            continue
        if reach is not None and (reach.end is None or reach.end.seq > execution.claim.seq):
            return reach, execution
        if reach is None or (reach.end is not None and (execution.end is None or execution.end.seq > reach.end.seq)):
            reach = execution
    return None


def _dead_letter_reason(history: JobHistory, contract: Contract, snap: dict[str, Any]) -> str:
    claims = len(history.executions)
    reasons = []
    if contract.max_attempts is not None and claims != contract.max_attempts:
        counted = f" (the queue counted {snap['attempts']})" if snap.get("attempts") is not None else ""
        reasons.append(f"dead-lettered after {claims} attempt(s){counted}, but the contract says "
                       f"max_attempts = {contract.max_attempts}")
    if history.poison is False:
        reasons.append(f"dead-lettered after {claims} attempt(s) although it was not a poison job "
                       "(enqueued with fail=false)")
    return "; ".join(reasons)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _witness(history: JobHistory, state: Pass) -> list[dict[str, Any]]:
    """The job's events plus the faults and process events of every worker that touched it, and the
    backend's (and other global) events during the job's life; the last WITNESS_LIMIT of them.

    Each source list is already in ledger order, so only its last WITNESS_LIMIT entries (within the
    window) can make the cut: a witness costs O(WITNESS_LIMIT) per source, whatever the ledger's size.
    """
    related = history.events[-WITNESS_LIMIT:]
    for worker in history.workers():
        related += state.context.get(worker, [])[-WITNESS_LIMIT:]
    if history.events:
        first, last = history.events[0].seq, history.events[-1].seq
        for key in (BACKEND, GLOBAL):
            around = state.context.get(key, [])
            lo = bisect.bisect_left(around, first, key=_seq)
            hi = bisect.bisect_right(around, last, key=_seq)
            related += around[max(lo, hi - WITNESS_LIMIT):hi]
    related.sort(key=_seq)
    origin = state.origin or 0.0
    return [{"seq": e.seq, "t": round(e.mono - origin, 4), "kind": e.kind, "job": e.job, "worker": e.worker,
             "data": e.data} for e in related[-WITNESS_LIMIT:]]


def _seq(event: Event) -> int:
    return event.seq


# -- faults and recovery -------------------------------------------------------------------------


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
    target = fault.target or ""
    pids = fault.applied.data.get("pids") or []
    if fault.kind in ("kill", "stop") and not pids:
        return False, "no live process of the target received the signal"
    if fault.kind == "kill":
        # The exit may be reaped before `fault.applied` is written: it only has to follow the journal entry.
        exits = [e for e in state.exits.get(target, []) if e.seq > fault.seq and e.data.get("pid") in pids]
        if not any(e.data.get("signal") == "SIGKILL" for e in exits):
            return False, f"no SIGKILL exit of a signalled process of {target} was reaped after the fault"
        return True, f"{target} killed by SIGKILL (pids {pids})"
    if fault.kind == "stop":
        resumed = f", resumed by SIGCONT at {state.at(fault.healed)}" if fault.healed else ", never resumed"
        return True, f"{target} stopped by SIGSTOP (pids {pids}){resumed}"
    if fault.kind == "restart":
        killed = next((e for e in state.exits.get(target, [])
                       if e.seq > fault.seq and e.data.get("signal") == "SIGKILL"), None)
        if killed is None:
            return False, f"no SIGKILL exit of {target} was reaped after the fault"
        started = next((e for e in state.starts.get(target, []) if e.seq > killed.seq), None)
        if started is None:
            return False, f"{target} was killed (pid {killed.data.get('pid')}) but never started again"
        return True, (f"{target} killed by SIGKILL (pid {killed.data.get('pid')}) and started again "
                      f"(pid {started.data.get('pid')})")
    if fault.kind == "backend_restart":
        restart = next((e for e in state.backend_restarts if e.seq > fault.seq), None)
        if restart is None:
            return False, "no backend.restart event followed the fault"
        return True, (f"backend restarted ({restart.data.get('mode', '?')}, pid {restart.data.get('old_pid')} -> "
                      f"{restart.data.get('new_pid')})")
    if fault.kind == "clock":
        offset = fault.data.get("offset_s") or 0.0
        if fault.clock_seen:
            return True, f"{target} ran with its wall clock shifted by {offset:+}s (seen on its probes)"
        if fault.clock_skew is None:
            return False, f"no probe from {target} carried its clock, so the {offset:+}s shift was never seen"
        return False, (f"{target}'s probes show a clock skew of {fault.clock_skew:+.3f}s, not the {offset:+}s "
                       "offset: the shifted clock did not take")
    return True, str(fault.applied.data.get("detail", "applied"))


def _recovery_summary(state: Pass) -> dict[str, Any]:
    per_job = {job: [round(r.seconds, 4) for r in h.recoveries] for job, h in state.jobs.items() if h.recoveries}
    times = [r for values in per_job.values() for r in values]
    if not times:
        return {"jobs": {}}
    return {"jobs": per_job, "min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4)}
