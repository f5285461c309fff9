"""Builds the run's history (`chaos.check.history`) in one pass over the ledger, proving anomalies on the way.

Each event is looked at once, and per-job work stays proportional to that job's events, so the pass is
linear in the ledger. Anomalies the events alone prove become `Finding`s; the contract judges them later:

- `premature_reclaim`: a claim while the job's current owner had not ended (or had just given it up
  as lost: the claim that took it is reported after it commits), its process alive, and no fault
  that excuses a reclaim (its kind says so: a kill, stop or restart of it since its claim, a clock
  fault on it, a backend restart since) reached it. It keeps how long since the owner's last accepted
  claim or extension: a lease the contract does not renew may have run out (`chaos.check.judgement`).
- `stale_ack_accepted`: an accepted ack by an execution that had been superseded. An ack whose outcome
  the worker could not learn (`ok` null) is judged as the target's control answered it
  (`chaos.check.control_answers`); unanswered, it ends its execution and proves nothing either way (the
  control's answer that the queue completed the job by some execution's ack, the queue's own record, or a
  final snapshot that shows the job done, may still prove it completed).
- `effect_after_lease_loss`: an accepted effect by a superseded execution; exposure = effect time -
  the superseding claim's time.
- `stale_extension_accepted`: a heartbeat reported `ok` by a superseded execution, when an earlier
  heartbeat of the same execution was already reported after the superseding claim. (One execution's
  heartbeats are sequential, so that extension began after the claim was in the ledger, hence after it
  committed; the first late report alone may be an extension that committed before the claim and
  whose report came late.)
- `work_after_known_loss`: an accepted effect by an execution whose own extension had failed (and no
  later one succeeded): it went on with work it knew it had lost.
- reclaims: a claim that takes the job from an owner that had not released it is kept (`Reclaim`) with
  the owner's last accepted claim or extension, for the lease rule the contract judges (`early_reclaim`).
- coverage: a claim reported while a fault suspends its worker (a SIGSTOP) may have been made before
  the fault, so that fault covers it: its owner counts as faulted since its claim.
- claims in flight: a claim sent before a fault froze or ended its worker, but reported after it, is
  judged when it was sent (`chaos.check.in_flight`): placed before any claim of the job made after it,
  ended by its process's reaped exit, and lost to the fault it crossed.
- claims the queue committed: where the queue's own record names a claim's token, the claim is judged
  no later than the record reached the ledger, and in the queue's order of commits, not its report's
  arrival (a batch picker reports each job's claim when its handler starts, long after the commit).
- heartbeat gaps: each owner's longest gap between accepted extensions (or its claim and first
  extension) that no fault on its worker explains, for the lease rule the contract judges (`heartbeat_gap`).
- worker leases (lease_scope = worker): a heartbeat is its worker's, so it extends (or, failing, loses)
  every execution the worker holds, whatever job and token it names; no stale extension is proven (an
  accepted worker heartbeat says nothing of a job taken from the worker).
- owners that died: a kill or restart that ends an execution still holding its job (no claim since
  before the fault) marks it (`Execution.died_by`), for the contract's on_owner_loss.
- recovery: a fault whose kind takes the owner (a kill, stop or restart of the owner's worker, a
  backend restart while the job was owned) loses the owner; recovery = next claim - the fault's
  applied time (0 when the claim landed between the fault's journal entry and its applied record). An
  owner that survives its fault and acks the job successfully needs no recovery; it is kept (`Return`,
  with its lease's start and its first accepted extension or ack since) for the lease rule, which judges
  whether the queue owed a reclaim meanwhile.
- completions: each accepted ack (by the worker's word or the control's answer), for
  `claim_after_completion`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from chaos import events
from chaos.check import proofs
from chaos.check.control_answers import Answer, evidence_words, source_of
from chaos.check.history import (
    GLOBAL,
    Execution,
    FaultHistory,
    Finding,
    Gap,
    JobHistory,
    Proof,
    Reclaim,
    Recovery,
    Return,
    RunHistory,
)
from chaos.check.in_flight import InFlight, in_flight
from chaos.events import Event
from chaos.faults import fault_kind
from chaos.faults.base import FaultKind

_GATE = "gate."
_SINK = events.SINK
_CONTEXT = ("process.", "fault.", "backend.", "network.")  # process, backend and proxy events; the rest of a fault's


def scan(ledger: Iterable[Event], gap_floor: float = 0.0, worker_leases: bool = False,
         committed: dict[tuple[str, str, str], Event] | None = None,
         answered: dict[tuple[str, str | None, str], Answer] | None = None,
         done: set[tuple[str, str | None, str]] | None = None) -> RunHistory:
    """The run's history; job events (the bulk of a ledger) take the shortest path through the loop.
    Heartbeat gaps up to `gap_floor` are not kept (the contract's lease: shorter ones break no rule);
    `worker_leases`: a heartbeat extends every job its worker holds (lease_scope = worker); `committed`:
    the queue's record of each claim it names by token; `answered`: the control's word on acks reported
    with ok null, from a source that decides acks; `done`: those acks whose job the control says completed,
    the ack undecided (the queue does not record by whose ack, or a result store holds the execution's result)."""
    run = RunHistory(gap_floor=gap_floor, worker_leases=worker_leases, committed=committed or {},
                     answered=answered or {}, done=done or set())
    jobs = run.jobs
    watched = run.watched
    last_probe = run.last_probe
    for event in ledger:
        if run.origin is None:
            run.origin = event.mono
        kind = event.kind
        job = event.job
        if job is not None and not kind.startswith(_GATE):  # the hot path: probes, enqueues, snapshots
            history = jobs.get(job)
            if history is None:
                history = jobs[job] = JobHistory(job)
            history.events.append(event)
            handler = _JOB_HANDLERS.get(kind)
            if handler is not None:
                handler(run, history, event)
            if event.source == _SINK:
                last_probe[event.worker] = event.mono
            if watched and event.worker in watched and kind.startswith(events.PROBE_PREFIX):
                _watch(watched[event.worker], event)
        elif kind == events.FAULT:
            _on_fault(run, event)
            _add_context(run, event)
        elif kind == events.FAULT_WAIVED:
            run.waived[str(event.data.get("kind"))] = str(event.data.get("why", ""))
        elif kind == events.FAULT_APPLIED:
            _on_fault_applied(run, event)
            _add_context(run, event)
        elif kind.startswith(_CONTEXT):
            _on_process_or_backend(run, event)
            _add_context(run, event)
        elif kind == events.GATE_ARMED:
            run.gates_armed[event.data["gate"]] = event.data.get("spec", "")
        elif kind == events.GATE_MATCHED:
            run.gate_matched.setdefault(event.data["gate"], event.seq)
            if job is not None:
                run.job(job).events.append(event)
            if event.worker is not None:
                run.gate_holders[event.data["gate"]] = (event.worker, event.mono)
            _hold(run, event.worker, event.seq)
        elif kind == events.GATE_RELEASED:
            holder = run.gate_holders.pop(event.data["gate"], None)
            if holder is not None:
                run.gate_holds.append((holder[0], holder[1], event.mono))
                _hold(run, holder[0], event.seq)
        elif kind == events.PROBE_REFUSED:
            run.refusals.append(event)
        elif kind == events.RUN_START:
            run.start = event.data
        elif kind == events.RUN_END:
            run.end = event.data
        elif kind == events.SNAPSHOT_TAKEN:
            run.snapshot_taken = event
    return run


def _hold(run: RunHistory, worker: str | None, seq: int) -> None:
    """A gate holding a worker's probe has frozen the thread that sent it, for as long as the scenario
    keeps it: like a SIGSTOP, that explains a heartbeat gap around it and excuses a reclaim from its owner
    (the lease rule, `early_reclaim`, still judges the reclaim against the lease)."""
    if worker is None:
        return
    run.touched[worker] = seq
    run.owner_faulted[worker] = seq


def _watch(faults: list[FaultHistory], event: Event) -> None:
    for fault in faults:
        watch = fault_kind(fault.kind).watch_probe
        if watch is not None:
            watch(fault, event)


def _on_enqueue(run: RunHistory, history: JobHistory, event: Event) -> None:
    history.enqueued = True
    fail = event.data.get("fail")
    history.poison = None if fail is None else bool(fail)


def _on_snapshot(run: RunHistory, history: JobHistory, event: Event) -> None:
    history.snapshot = event.data
    history.snapshot_at = event.mono


def _on_abandon(run: RunHistory, history: JobHistory, event: Event) -> None:
    execution = _execution(history, event)
    if execution is not None:
        _end(run, execution, event, "abandon")


def _add_context(run: RunHistory, event: Event) -> None:
    key = event.worker or event.data.get("target") or GLOBAL
    run.context.setdefault(key, []).append(event)


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


def _end(run: RunHistory, execution: Execution, event: Event, how: str) -> None:
    if execution.end is None:
        execution.end = event
        execution.ended_by = how
        owned = run.open.get(execution.worker)
        if owned is not None:
            owned.discard(execution)


def _on_claim(run: RunHistory, history: JobHistory, event: Event) -> None:
    execution = Execution(history.job, event.worker or "?", event.data.get("token"), event.data.get("pid"), event)
    if event.worker is not None:  # as `chaos.check.labels.of_ledger` names it
        execution.label = run.labels.claim(history.job, event.worker, execution.token)
    execution.covered = run.suspended.get(execution.worker, 0) > 0
    execution.gap_s = run.gap_floor
    flight = in_flight(run, event)
    successor = None
    if flight is not None:  # sent before a fault froze or ended its worker: judged at that time
        execution.at = execution.extended_at = flight.at
        execution.since = execution.extended_seq = flight.since
        successor = _successor(run, history, execution)
    record = run.committed.get((history.job, execution.worker, str(execution.token))) if run.committed else None
    if record is not None:  # the queue's record: committed by the time it was journaled, in the queue's order
        if record.mono < execution.at:
            execution.at = execution.extended_at = record.mono
            execution.since = execution.extended_seq = min(execution.since, record.seq)
        successor = _successor(run, history, execution)
    if successor is None:
        _take(run, history, execution, event)
    else:
        _insert_before(run, history, execution, successor)
    if flight is not None:
        _crossed(run, history, execution, flight, successor)


def _successor(run: RunHistory, history: JobHistory, execution: Execution) -> Execution | None:
    """The earliest of the job's claims reported since, but made after this one (its report came late):
    by the queue's order of commits where its record has both claims, else by when each was made."""
    mine = _order(run, execution)
    successor = None
    for other in reversed(history.executions):
        if (other.worker, other.token) == (execution.worker, execution.token):
            break
        theirs = _order(run, other)
        if not (theirs > mine if mine is not None and theirs is not None else other.at > execution.at):
            break
        successor = other
    return successor


def _order(run: RunHistory, execution: Execution) -> Any:
    """Where the queue's record has this claim, its place in the queue's order of commits."""
    record = run.committed.get((execution.job, execution.worker, str(execution.token))) if run.committed else None
    return None if record is None else record.data.get("order")


def _insert_before(run: RunHistory, history: JobHistory, execution: Execution, successor: Execution) -> None:
    """A claim made before `successor`'s but reported after it: ownership went from it to `successor`."""
    history.executions.insert(history.executions.index(successor), execution)
    history.by_key.setdefault((execution.worker, execution.token), execution)
    execution.superseded_by = successor
    excused = execution.covered or run.suspended_since.get(execution.worker, -1) > execution.since
    history.reclaims.append(Reclaim(execution, successor, excused))
    run.open.setdefault(execution.worker, set()).add(execution)


def _crossed(run: RunHistory, history: JobHistory, execution: Execution, flight: InFlight,
             successor: Execution | None) -> None:
    """What the faults it crossed did to it: a reaped process ended it, and the first fault that took its
    job starts the job's recovery (closed by `successor`'s claim, when one was already reported)."""
    if flight.exit is not None:
        _end(run, execution, flight.exit, "exit")
    for fault in flight.crossed:
        if not fault_kind(fault.kind).takes_owner:
            continue
        if fault.applied is None:  # its application takes it with the rest, unless it is already over
            if execution.end is not None:
                fault.victims.append(execution)
            return
        fault.victims.append(execution)
        _died(fault, execution)
        if successor is None:
            if history.latest is execution and history.lost_owner_at is None:
                _lose(history, fault, execution, fault.applied.mono)
        elif not any(r.claim_seq == successor.claim.seq for r in history.recoveries):
            history.recoveries.append(Recovery(max(0.0, successor.claim.mono - fault.applied.mono), fault.id,
                                               execution.worker, successor.worker, successor.claim.seq))
        return


def _take(run: RunHistory, history: JobHistory, execution: Execution, event: Event) -> None:
    """The claim takes the job from its current owner, if any: the usual case, in report order."""
    worker, token = execution.worker, execution.token
    previous = history.latest
    if previous is not None:
        if previous.worker == worker and previous.token == token:
            _end(run, previous, event, "reclaim")  # the same claim again: not a competitor
        else:
            previous.superseded_by = execution
            if not _released(previous):
                excused = previous.covered or run.suspended_since.get(previous.worker, -1) > previous.since
                history.reclaims.append(Reclaim(previous, execution, excused))
            if not execution.covered and _taken_from_healthy_owner(run, previous):
                held = event.mono - previous.at
                gave_up = previous.end
                when = ("still owned it" if previous.end is None else
                        f"had lost it to this claim (it gave it up at {run.at(previous.end)}, reported before the "
                        "claim that caused it)")
                history.findings.append(Finding(
                    "premature_reclaim", event.seq,
                    f"{execution.who()} claimed it at {run.at(event)} while {previous.who()} {when}: "
                    f"{previous.worker} had held it for {held:.3f}s (since {run.at(previous.claim)}), its "
                    "process alive and unfaulted (no kill, stop or restart of it since its claim, no clock "
                    "fault on it, no backend restart since its claim)",
                    detail={"claimer": worker, "claimer_token": token, "owner": previous.worker,
                            "owner_token": previous.token, "held_s": round(held, 4)},
                    renewed_s=execution.at - previous.extended_at,
                    proof=partial(proofs.premature_reclaim, run, previous, gave_up, execution)))
    if history.lost_owner_at is not None:
        fault, owner = history.lost or ("?", "?")
        since = history.lost_owner_at
        taker = run.faults.get(fault)
        if taker is not None and fault_kind(taker.kind).recovery_from == "healed" and taker.healed is None:
            since = event.mono  # nobody claims while it lasts: its heal took effect, though not yet journaled
        history.recoveries.append(Recovery(event.mono - since, fault, owner, worker, event.seq))
        history.lost_owner_at = None
        history.lost = None
        history.lease_from = history.returned = None
    history.latest = execution
    history.executions.append(execution)
    history.by_key[(worker, token)] = execution
    owned = run.open.get(worker)
    if owned is None:
        owned = run.open[worker] = set()
    owned.add(execution)


def _released(execution: Execution) -> bool:
    """Did the owner's ownership end on its own account: an ack the queue answered (accepted, or refused
    because it was no longer the owner), or an abandon other than one because it had lost the job? (An ack
    whose outcome the worker could not learn, ok null, proves neither.)"""
    end = execution.end
    if end is None:
        return False
    if execution.ended_by == "ack":
        return end.data.get("ok") is not None
    return execution.ended_by == "abandon" and end.data.get("reason") != "lost"


def _taken_from_healthy_owner(run: RunHistory, previous: Execution) -> bool:
    """A reclaim is premature when the owner was alive and unfaulted and either still in its handler, or
    had just given the job up because it lost it (a worker reports its claim after committing it, so the
    owner's reaction to the theft, a failed heartbeat and an abandon, can reach the ledger first)."""
    if _owner_faulted(run, previous):
        return False
    if previous.end is None:
        return True
    return previous.ended_by == "abandon" and previous.end.data.get("reason") == "lost"


def _owner_faulted(run: RunHistory, execution: Execution) -> bool:
    """Did a fault that excuses a reclaim reach the owner (since its claim, or from its start)?"""
    since = execution.since
    return (execution.covered or run.owner_faulted.get(execution.worker, -1) > since
            or execution.worker in run.always_excused or run.everyone_faulted > since)


def _on_effect(run: RunHistory, history: JobHistory, event: Event) -> None:
    if not event.data.get("accepted", True):
        return
    history.effects.append(event)
    execution = _execution(history, event)
    if execution is None:
        return
    execution.last_effect = event
    winner = execution.superseded_by
    if winner is not None:
        _after_loss(history, "effect_after_lease_loss", execution, event, winner.claim, lambda exposure: (
            f"{execution.who()} made an accepted effect {exposure:.3f}s after {winner.who()} had claimed the job "
            f"(claimed at {run.at(winner.claim)}, effect at {run.at(event)})"),
            partial(proofs.effect_after_lease_loss, run, execution, winner, event), claimer=winner)
    lost = execution.lost_at
    if lost is not None:
        _after_loss(history, "work_after_known_loss", execution, event, lost, lambda exposure: (
            f"{execution.who()} made an accepted effect at {run.at(event)}, {exposure:.3f}s after its own lease "
            f"extension failed (at {run.at(lost)}) with no later one succeeding: it went on with work it knew "
            "it had lost"), partial(proofs.work_after_known_loss, run, execution, lost, event))


def _after_loss(history: JobHistory, kind: str, execution: Execution, event: Event, loss: Event,
                message: Callable[[float], str], proof: Callable[[], Proof],
                claimer: Execution | None = None) -> None:
    """A finding that `execution` went on (`event`) after it had lost the job (`loss`): exposure = the time
    between the two; `claimer` is the execution that took the job, where one did; `proof` builds its premises
    should it be emitted."""
    exposure = event.mono - loss.mono
    detail: dict[str, Any] = {"worker": execution.worker, "token": execution.token}
    if claimer is not None:
        detail.update(claimer=claimer.worker, claimer_token=claimer.token)
    detail["exposure_s"] = round(exposure, 4)
    history.findings.append(Finding(kind, event.seq, message(exposure), exposure, detail, proof=proof))


def _on_heartbeat(run: RunHistory, history: JobHistory, event: Event) -> None:
    if run.worker_leases:
        _on_worker_heartbeat(run, event)
        return
    execution = _execution(history, event)
    if execution is None:
        return
    ok = bool(event.data.get("ok"))
    winner = execution.superseded_by
    if winner is not None:
        earlier = execution.late_beat
        if earlier is None:
            execution.late_beat = event
        elif ok and not execution.stale_extended:
            execution.stale_extended = True
            _after_loss(history, "stale_extension_accepted", execution, event, winner.claim, lambda exposure: (
                f"{execution.who()} extended its lease successfully at {run.at(event)}, {exposure:.3f}s after "
                f"{winner.who()} had claimed the job (at {run.at(winner.claim)}), and after an earlier extension "
                "of it was reported: the queue extended a lease it no longer granted"),
                partial(proofs.stale_extension, run, execution, winner, earlier, event), claimer=winner)
    if ok:
        if winner is None:
            _extend(run, execution, event)
            _renewed(history, execution, event)
        execution.lost_at = None
    elif execution.lost_at is None:
        execution.lost_at = event


def _on_worker_heartbeat(run: RunHistory, event: Event) -> None:
    """lease_scope = worker: the heartbeat extends every execution its worker holds (the superseded ones
    no longer hold a lease to extend), or, failing, tells each of them its lease is lost."""
    ok = bool(event.data.get("ok"))
    for execution in run.open.get(event.worker or "?", ()):
        if ok:
            if execution.superseded_by is None:
                _extend(run, execution, event)
                _renewed(run.jobs[execution.job], execution, event)
            execution.lost_at = None
        elif execution.lost_at is None:
            execution.lost_at = event


def _renewed(history: JobHistory, execution: Execution, event: Event) -> None:
    """The owner a fault took renews its lease again: its first such extension is when it came back."""
    if history.lease_from is not None and history.returned is None and history.latest is execution:
        history.returned = event


def _extend(run: RunHistory, execution: Execution, event: Event) -> None:
    """An accepted extension of the owner's lease: its gap since the last one, and the lease's new start."""
    if event.mono - execution.extended_at > execution.gap_s:
        _longest_gap(run, execution, event)
    execution.extended_at, execution.extended_by, execution.extended_seq = event.mono, event, event.seq


def _longest_gap(run: RunHistory, execution: Execution, event: Event) -> None:
    """The owner's longest gap so far between accepted extensions (or its claim and first extension) ends at
    this one: kept unless a fault on its worker (or on everyone) explains it, or one on everyone is under
    way (journaled, not yet applied: the workers may reach a restarted server before its restart returns)."""
    worker = execution.worker
    if (max(run.touched.get(worker, -1), run.everyone_touched) > execution.extended_seq
            or run.suspended.get(worker, 0) > 0 or worker in run.always_excused or run.everyone_underway):
        return
    execution.gap_s = event.mono - execution.extended_at
    execution.gap = Gap(execution.gap_s, execution.extended_by, event)


def _on_ack(run: RunHistory, history: JobHistory, event: Event) -> None:
    source = source_of(event)
    if event.data.get("ok") is not None and source not in events.ACK_SOURCES:
        # A result store's word: the task ran to completion, which says nothing of whether its ack was taken.
        history.completion_proven = history.completion_proven or event.data["ok"] is True
        event = event._replace(data=dict(event.data, ok=None))
    elif event.data.get("ok") is None and (run.answered or run.done):
        key = (history.job, event.worker, str(event.data.get("token")))
        answer = run.answered.get(key)
        if answer is not None:  # the worker could not know; the control said what the queue did, and from what
            source = answer[1]
            event = event._replace(data=dict(event.data, ok=answer[0], answered_by="control", source=source))
        elif key in run.done:  # the job completed, by this ack or another's: the ack judged as neither
            history.completion_proven = True
    if event.data.get("ok") is True:
        history.completion_proven = True
    execution = _execution(history, event)
    if event.data.get("ok") is True and (execution is None or history.latest in (None, execution)):
        # A stale owner's accepted ack is judged by its own rule (stale_ack_accepted): it proves no completion
        # of the job its new owner holds (SQS: a delete with an old receipt handle succeeds, the message kept).
        history.completions.append(event)
    if execution is None:
        return
    if event.data.get("ok"):
        owner = history.latest
        if owner is not None and owner is not execution:
            winner = execution.superseded_by or owner
            exposure = event.mono - winner.claim.mono
            by_control = event.data.get("answered_by") == "control"
            history.findings.append(Finding(
                "stale_ack_accepted", event.seq,
                f"{execution.who()} acknowledged it successfully at {run.at(event)} although {owner.who()} "
                f"had claimed it since (at {run.at(owner.claim)}): the queue accepted an ack from a claim it "
                f"no longer held (the evidence: {evidence_words(source, by_control)})", exposure,
                {"worker": execution.worker, "token": execution.token, "owner": owner.worker,
                 "owner_token": owner.token, "exposure_s": round(exposure, 4), "source": source,
                 **({"answered_by": "control"} if by_control else {})},
                proof=partial(proofs.stale_ack, run, execution, winner, event, by_control)))
        elif owner is execution:
            if (history.lost is not None and history.lost_owner_at is not None
                    and history.lease_from is not None):  # it came back, nobody had claimed it
                history.returns.append(Return(history.lost[0], execution, history.lost_owner_at, history.lease_from,
                                              history.returned or event))
            history.lost_owner_at = None  # the owner survived its fault and completed the job
            history.lost = None
            history.lease_from = history.returned = None
    _end(run, execution, event, "ack")


def _on_queue_complete(run: RunHistory, history: JobHistory, event: Event) -> None:
    """The queue's own record shows it accepted a completion of the job."""
    history.completion_proven = True


_JOB_HANDLERS: dict[str, Callable[[RunHistory, JobHistory, Event], None]] = {
    events.PROBE_CLAIM: _on_claim, events.PROBE_EFFECT: _on_effect, events.PROBE_ACK: _on_ack,
    events.PROBE_HEARTBEAT: _on_heartbeat,
    events.PROBE_ABANDON: _on_abandon, events.ENQUEUE: _on_enqueue, events.SNAPSHOT: _on_snapshot,
    events.QUEUE_COMPLETE: _on_queue_complete,
}


def _on_fault(run: RunHistory, event: Event) -> None:
    data = event.data
    fault = run.faults[data["id"]] = FaultHistory(data["id"], data["kind"], data.get("target"), data.get("gate"),
                                                    event.seq, data, journal=event)
    rule = fault_kind(fault.kind)
    # A fault is under way from its journal entry on: a reclaim while it is being applied (a server
    # going down ends its sessions before restart() returns) is a consequence of it, never premature.
    if rule.takes_owner:
        fault.victims = _reached(run, rule, fault)
    _excuse(run, rule, fault.target, event.seq)
    if rule.reach == "everyone":
        run.everyone_underway += 1
    if rule.suspends and fault.target:
        run.suspended[fault.target] = run.suspended.get(fault.target, 0) + 1
        run.suspended_since[fault.target] = event.seq
    if rule.watch_probe is not None and fault.target:
        run.watched.setdefault(fault.target, []).append(fault)
    if (rule.suspends or rule.ends_executions) and fault.target:
        run.freezes.setdefault(fault.target, []).append(fault)
    _touch(run, fault, event)


def _touch(run: RunHistory, fault: FaultHistory, event: Event) -> None:
    """Note that this fault acted on its target (or on everyone) at this event: it explains a heartbeat gap
    around it."""
    if fault_kind(fault.kind).reach == "everyone":
        run.everyone_touched = event.seq
    elif fault.target:
        run.touched[fault.target] = event.seq


def _on_fault_applied(run: RunHistory, event: Event) -> None:
    fault = run.faults.get(event.data["id"])
    if fault is None:
        return
    fault.applied = event
    _touch(run, fault, event)
    rule = fault_kind(fault.kind)
    if rule.reach == "everyone" and run.everyone_underway:
        run.everyone_underway -= 1
    if not rule.takes_owner:
        return
    _excuse(run, rule, fault.target, event.seq)
    # executions reached at the journal entry, plus any claimed between the journal and the application
    fault.victims += [e for e in _reached(run, rule, fault) if e.claim.seq > fault.seq]
    _lose_owners(run, fault, event)
    for execution in fault.victims:
        _died(fault, execution)
    if rule.ends_executions and fault.journal is not None:
        _end_at_journal(run, fault, fault.journal)


def _died(fault: FaultHistory, execution: Execution) -> None:
    """A fault that ends executions (a kill, a restart) reached this one: its owner died holding the job,
    unless a claim made before the fault had already taken it."""
    taken = execution.superseded_by
    if (fault_kind(fault.kind).ends_executions and execution.died_by is None
            and (taken is None or taken.since >= fault.seq)):
        execution.died_by = fault


def _reached(run: RunHistory, rule: FaultKind, fault: FaultHistory) -> list[Execution]:
    """The unended executions a fault of this kind reaches: its target worker's (only those of the process
    that sent a held probe, for a sender-scoped one), or every worker's."""
    if rule.reach == "everyone":
        return [e for owned in run.open.values() for e in owned]
    owned = list(run.open.get(fault.target, ())) if fault.target else []
    if fault.data.get("scope") == "sender":
        return [e for e in owned if e.pid == fault.data.get("pid")]
    return owned


def _excuse(run: RunHistory, rule: FaultKind, target: str | None, seq: int) -> None:
    """Record that a reclaim from an owner this fault reached is a consequence of it, not premature."""
    if rule.excuses == "since_claim":
        if rule.reach == "everyone":
            run.everyone_faulted = max(run.everyone_faulted, seq)
        elif target:
            run.owner_faulted[target] = seq
    elif rule.excuses == "always" and target:
        run.always_excused.add(target)


def _end_at_journal(run: RunHistory, fault: FaultHistory, journal: Event) -> None:
    """A kill or restart ends the executions its target ran at its journal entry: the process is dying
    from then on, and its reaped exit (or the record of the fault) may reach the ledger only after a
    fast reclaim (a row lock is freed within milliseconds) has been reported."""
    for execution in fault.victims:
        if execution.claim.seq < fault.seq and execution.ended_by in (None, "exit"):
            if execution.end is None:
                _end(run, execution, journal, "fault")
            else:
                execution.end, execution.ended_by = journal, "fault"


def _lose(history: JobHistory, fault: FaultHistory, owner: Execution, at: float) -> None:
    """The fault took the job's owner: its recovery clock starts at `at`, and its lease ran from the owner's
    last accepted claim or extension (for the lease rule, should the owner come back to complete it)."""
    history.lost_owner_at = at
    history.lost = (fault.id, owner.worker)
    history.lease_from, history.returned = owner.extended_at, None


def _lose_owners(run: RunHistory, fault: FaultHistory, applied: Event) -> None:
    """Each job whose owner this fault took starts its recovery clock at the fault's applied time."""
    for execution in fault.victims:
        history = run.jobs[execution.job]
        if history.latest is execution:
            if execution.ended_by != "ack" and history.lost_owner_at is None:
                _lose(history, fault, execution, applied.mono)
        elif execution.superseded_by is not None and execution.superseded_by.claim.seq > fault.seq:
            # reclaimed between the fault's journal entry and its application record: recovered at once
            # (unless that claim already closed the recovery of an earlier fault)
            winner = execution.superseded_by
            if not any(r.claim_seq == winner.claim.seq for r in history.recoveries[-1:]):
                history.recoveries.append(Recovery(max(0.0, winner.claim.mono - applied.mono), fault.id,
                                                   execution.worker, winner.worker, winner.claim.seq))


def _on_process_or_backend(run: RunHistory, event: Event) -> None:
    kind = event.kind
    worker = event.worker
    if kind == events.PROCESS_EXIT and worker:
        run.exits.setdefault(worker, []).append(event)
        run.reaped[(worker, event.data.get("pid"))] = event
        if event.data.get("expected") is False:
            run.unexpected_exits.append(event)
        if event.data.get("forced"):
            run.forced_exits.append(event)
        _on_exit(run, worker, event)
    elif kind == events.PROCESS_START and worker:
        run.starts.setdefault(worker, []).append(event)
    elif kind == events.FAULT_HEALED:
        fault = run.faults.get(event.data.get("id", ""))
        if fault is not None:
            fault.healed = event
            _touch(run, fault, event)
            rule = fault_kind(fault.kind)
            if rule.recovery_from == "healed":
                _recover_from(run, fault, event)
            if rule.suspends and fault.target and run.suspended.get(fault.target):
                run.suspended[fault.target] -= 1
    elif kind == events.BACKEND_RESTART:
        run.backend_restarts.append(event)
        run.everyone_faulted = max(run.everyone_faulted, event.seq)
        run.everyone_touched = event.seq
    elif kind == events.NETWORK_START:
        run.network = event.data


def _recover_from(run: RunHistory, fault: FaultHistory, healed: Event) -> None:
    """The jobs this fault took, still unrecovered, start their recovery at its heal."""
    for history in run.jobs.values():
        if history.lost is not None and history.lost[0] == fault.id and history.lost_owner_at is not None:
            history.lost_owner_at = max(history.lost_owner_at, healed.mono)


def _on_exit(run: RunHistory, worker: str, event: Event) -> None:
    """A process exit ends the executions it ran: all of the worker's when it was its current process."""
    owned = run.open.get(worker)
    if not owned:
        return
    pid = event.data.get("pid")
    starts = run.starts.get(worker)
    current = starts[-1] if starts else None
    if current is None or pid is None or current.data.get("pid") == pid:
        ended = list(owned)
    else:  # an older incarnation: only what it claimed (or anything claimed before the current one started)
        ended = [e for e in owned if e.pid == pid or e.claim.seq < current.seq]
    for execution in ended:
        _end(run, execution, event, "exit")

