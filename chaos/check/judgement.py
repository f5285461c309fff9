"""The judgement rules: each job's outcome, and which of its anomalies the contract forbids.

- `completed`: one effect, and a completion proven (an ack the queue accepted, by the worker's word or the
  control's answer, a completion in the queue's own record, or a final snapshot that shows it done). A job
  the snapshot does not show is not proven completed (a snapshot that skips in-flight jobs would hide a
  stuck one): it is `unknown` (not judged, the run inconclusive), or `dropped` under on_owner_loss = drop
  when its owner died.
- `overlapped`: two executions that each made an accepted effect and worked at once (one claimed the
  job before the other's last effect); `redelivered`: several effects, executions one after another.
  Either, where the contract allows it, needs a completion proven as `completed` does (a job redelivered
  and then stuck where the snapshot does not look is `unknown`); where the contract forbids it, the
  effects alone prove the violation.
- dead letters: a job ending dead after a number of claims != contract.max_attempts (when set), or a
  job enqueued with fail=false ending dead, is a `dead_lettered` violation.
- a recovery past contract.recovery_bound_s is a `recovery_bound_exceeded` violation.
- `heartbeat_gap` (with a contract lease_s or reservation_s): an owner whose consecutive accepted
  extensions (or its claim and first extension) were further apart than that bound, plus the tolerance,
  with no fault on it to explain the gap: it held the job past its lease, and only a queue that failed to
  expire it let the next extension succeed.
- `early_reclaim` (with a contract lease_s): a claim that took the job from an owner that had not released
  it, sooner than the owner's lease allowed: before its last accepted claim or extension plus lease_s,
  less contract.reclaim_tolerance_s. (A kill does not excuse it: a lease outlives its owner.) Under
  lease_scope = worker an extension is any accepted heartbeat of the owner's worker (`chaos.check.scan`).
- owner loss (contract.on_owner_loss, for a job whose last owner died: a kill or restart ended its
  execution while it held the job): under "fail" a job that ends dead is the promise kept (`dead_lettered`
  with no alarm, whatever its attempts); under "drop" a job gone from the queue (absent) with no effect is
  `dropped`, not `lost`; under either, a claim after the owner died is `redelivered_after_owner_loss`. A
  job gone without its owner dying is `lost`, and one pending or claimed past the bound `stuck`, always.

Event-proven anomalies (premature or early reclaim, stale ack or extension, effect after lease loss, work
after known loss, recovery bound) are judged even when the final snapshot is missing; outcome-based ones
(lost, stuck, redelivered, overlapped, dead letters) need the snapshot. Allowed anomalies (a late effect
under after-lease-loss + at-least-once, a stale ack or extension under stale_ack = accepted, work after
a known loss without a watchdog) are returned apart, with their exposure, for `Verdict.anomalies`.
"""

from __future__ import annotations

import bisect
import math
from itertools import pairwise
from typing import Any

from chaos import events
from chaos.check.capacity import free_seconds
from chaos.check.history import GLOBAL, Execution, JobHistory, Recovery, RunHistory
from chaos.check.verdict import Violation
from chaos.contract import Contract
from chaos.events import BACKEND, Event

WITNESS_LIMIT = 200


def judge_job(history: JobHistory, contract: Contract,
              run: RunHistory) -> tuple[str, list[Violation], list[dict[str, Any]]]:
    """The job's outcome, the violations it shows under the contract, and the anomalies the contract allows."""
    outcome, reason = _outcome(history, contract, run)
    gaps = _heartbeat_gaps(history, contract, run)
    rerun = _rerun_after_owner_died(history, contract, run)
    if (not reason and not history.findings and not history.recoveries and not history.reclaims and not gaps
            and rerun is None):
        return outcome, [], []  # the common case
    witness: list[dict[str, Any]] | None = None

    def violation(kind: str, message: str, detail: dict[str, Any] | None = None) -> Violation:
        nonlocal witness
        if witness is None:
            witness = _witness(history, run)
        return Violation(kind, history.job, message, witness, dict(detail or {}))

    found = [violation(outcome, reason)] if reason else []
    allowed: list[dict[str, Any]] = []
    for finding in history.findings:
        if _allowed(finding.kind, contract):
            allowed.append({"kind": finding.kind, "job": history.job, "exposure_s": _round(finding.exposure_s),
                            "message": f"{finding.message} ({_allowed_by(finding.kind, contract)})",
                            **({"source": finding.detail["source"]} if "source" in finding.detail else {})})
        else:
            found.append(violation(finding.kind, f"{finding.message}{_forbidden_by(finding.kind, contract)}",
                                   finding.detail))
    bound = contract.recovery_bound_s
    for recovery in history.recoveries:
        if recovery.seconds > bound and _waited_with_a_worker_free(history, recovery, run) > bound:
            fault = run.faults.get(recovery.fault)
            what = f"{fault.kind} {fault.target}" if fault is not None else "?"
            found.append(violation(
                "recovery_bound_exceeded",
                f"reclaimed by {recovery.by} {recovery.seconds:.3f}s after fault {recovery.fault} ({what}) took its "
                f"owner {recovery.owner}, past the recovery bound of {bound}s",
                {"recovery_s": round(recovery.seconds, 4), "bound_s": bound, "fault": recovery.fault,
                 "owner": recovery.owner, "by": recovery.by}))
    found += [violation("early_reclaim", why, detail) for why, detail in _early_reclaims(history, contract, run)]
    found += [violation("heartbeat_gap", why, detail) for why, detail in gaps]
    if rerun is not None:
        found.append(violation("redelivered_after_owner_loss", *rerun))
    return outcome, found, allowed


def _waited_with_a_worker_free(history: JobHistory, recovery: Recovery, run: RunHistory) -> float:
    """How long of the recovery some worker was free to take the job (`chaos.check.capacity`)."""
    claimed = next((e.claim.mono for e in history.executions if e.claim.seq == recovery.claim_seq), None)
    if claimed is None:
        return recovery.seconds
    return free_seconds(run, claimed - recovery.seconds, claimed)


def _rerun_after_owner_died(history: JobHistory, contract: Contract,
                            run: RunHistory) -> tuple[str, dict[str, Any]] | None:
    """Under on_owner_loss = fail or drop, the first claim made after a kill or restart ended the execution
    that held the job: the queue promised never to run such a job again. None when there is none."""
    if contract.on_owner_loss == "redeliver":
        return None
    executions = history.executions  # in claim order
    for dead, claimer in pairwise(executions):
        fault = dead.died_by
        if fault is None or fault.applied is None or claimer.since < fault.seq:
            continue
        after = max(0.0, claimer.at - fault.applied.mono)
        promise = "recorded failed" if contract.on_owner_loss == "fail" else "dropped"
        return (f"{claimer.who()} claimed it at {run.at(claimer.claim)}, {after:.3f}s after fault {fault.id} "
                f"({fault.kind} {fault.target}) ended the execution of its owner {dead.who()}: the contract says "
                f"on_owner_loss = {contract.on_owner_loss} (a job whose owner dies is {promise}, never run again), "
                "but the queue delivered it again",
                {"fault": fault.id, "owner": dead.worker, "owner_token": dead.token, "claimer": claimer.worker,
                 "claimer_token": claimer.token, "after_s": round(after, 4),
                 "on_owner_loss": contract.on_owner_loss})
    return None


def _owner_died(history: JobHistory) -> Execution | None:
    """The job's last execution (in claim order), when a kill or restart ended it holding the job."""
    last = history.executions[-1] if history.executions else None
    return last if last is not None and last.died_by is not None else None


def _heartbeat_gaps(history: JobHistory, contract: Contract, run: RunHistory) -> list[tuple[str, dict[str, Any]]]:
    """Each execution's longest unexplained gap between accepted extensions, when it is past the lease (the
    reports' times are upper bounds of the commits, hence the tolerance)."""
    bound = contract.renewal_bound_s
    if bound is None:
        return []
    tolerance = contract.lease_tolerance_s if contract.lease_tolerance_s is not None else 0.25 * bound
    key = "lease_s" if contract.lease_s is not None else "reservation_s"
    gaps = []
    for execution in history.executions:
        gap = execution.gap
        if gap is None or gap.seconds <= bound + tolerance:
            continue
        gaps.append((f"{execution.who()} held it {gap.seconds:.3f}s between accepted extensions (from "
                     f"{run.at(gap.since)} to {run.at(gap.until)}), past {key} = {bound}s (tolerance {tolerance:.3f}s) "
                     "with no fault on it to explain the gap: its lease had run out while it worked, and the queue "
                     "still accepted the next extension",
                     {"worker": execution.worker, "token": execution.token, "gap_s": round(gap.seconds, 4),
                      key: bound}))
    return gaps


def _early_reclaims(history: JobHistory, contract: Contract, run: RunHistory) -> list[tuple[str, dict[str, Any]]]:
    """Each reclaim reported sooner than the owner's lease allowed (the reports' times are upper bounds of
    the commits, hence the tolerance); none without a lease in the contract."""
    lease = contract.lease_s
    if lease is None:
        return []
    tolerance = contract.reclaim_tolerance_s
    early = []
    for reclaim in history.reclaims:
        owner, claimer = reclaim.owner, reclaim.claimer
        soon = owner.extended_at + lease - claimer.at
        if reclaim.excused or soon <= tolerance:
            continue
        early.append((f"{claimer.who()} claimed it at {run.at(claimer.claim)}, {soon:.3f}s before the lease of "
                      f"{owner.who()} could have expired: its last accepted claim or extension was reported at "
                      f"+{owner.extended_at - (run.origin or 0.0):.3f}s and lease_s = {lease}s (tolerance "
                      f"{tolerance:.3f}s); the queue does not enforce its lease",
                      {"claimer": claimer.worker, "claimer_token": claimer.token, "owner": owner.worker,
                       "owner_token": owner.token, "early_s": round(soon, 4), "lease_s": lease}))
    return early


def _allowed(kind: str, contract: Contract) -> bool:
    if kind in ("stale_ack_accepted", "stale_extension_accepted"):
        return contract.stale_ack == "accepted"
    if kind == "work_after_known_loss":
        return not contract.watchdog
    if kind == "effect_after_lease_loss":
        return contract.overlap == "after-lease-loss" and contract.delivery == "at-least-once"
    return False  # premature_reclaim: a queue that reclaims from a live, healthy owner breaks its own ownership


def _allowed_by(kind: str, contract: Contract) -> str:
    if kind in ("stale_ack_accepted", "stale_extension_accepted"):
        return "allowed: stale_ack = accepted"
    if kind == "work_after_known_loss":
        return "allowed: the contract promises no watchdog (watchdog = false)"
    return f"allowed: overlap = {contract.overlap}, delivery = {contract.delivery}"


def _forbidden_by(kind: str, contract: Contract) -> str:
    if kind in ("stale_ack_accepted", "stale_extension_accepted"):
        return f"; the contract says stale_ack = {contract.stale_ack}"
    if kind == "work_after_known_loss":
        return "; the contract says watchdog = true (the queue stops work it lost)"
    if kind == "effect_after_lease_loss":
        return f"; the contract says overlap = {contract.overlap}, delivery = {contract.delivery}"
    return ""


def free_while_waiting(history: JobHistory, run: RunHistory) -> float:
    """How long, of the job's wait until the final snapshot (since its owner was lost, else since it was
    enqueued), some worker was free to take it (`chaos.check.capacity`): a job nobody could take for as
    long as the recovery bound proves nothing about the queue."""
    if history.snapshot_at is None:
        return math.inf
    since = history.lost_owner_at
    if since is None:
        since = min((e.mono for e in history.events if e.kind == events.ENQUEUE), default=history.snapshot_at)
    return free_seconds(run, since, history.snapshot_at, busy_with_jobs=False)


def _outcome(history: JobHistory, contract: Contract, run: RunHistory) -> tuple[str, str]:
    """The job's outcome and, when the contract forbids it, why (empty when it is fine)."""
    effects = len(history.effects)
    snap = history.snapshot or {}
    where = snap.get("state", "absent")
    if not history.enqueued:
        return "unexpected", f"{effects} effect(s) for a job that was never enqueued"
    if not run.snapshot_taken:
        return "unknown", ""
    if where == "dead":
        if contract.on_owner_loss == "fail" and _owner_died(history) is not None:
            return "dead_lettered", ""  # the promise kept: its owner died, and the queue recorded it failed
        return "dead_lettered", _dead_letter_reason(history, contract, snap)
    if where in ("pending", "claimed"):
        if (unsettled_for(history, contract.recovery_bound_s) is not None
                or free_while_waiting(history, run) <= contract.recovery_bound_s):
            return "unsettled", ""  # its owner was lost too recently, or nobody was free to take it: not judged
        owner = f", claimed by {snap['owner']}" if snap.get("owner") else ""
        claims = len(history.executions)
        return "stuck", (f"still {where}{owner} at the end of the run, past the recovery bound of "
                         f"{contract.recovery_bound_s}s, after {claims} claim(s) and {effects} effect(s)")
    if effects == 0:
        return _gone(history, contract, where)
    outcome, reason = _effected(history, contract, run)
    if reason or _completion_proven(history):
        return outcome, reason  # a violation the effects prove needs no completion
    return _unproven(history, contract)


def _effected(history: JobHistory, contract: Contract, run: RunHistory) -> tuple[str, str]:
    """What the job's effects make it, were a completion of it proven: completed (one effect), overlapped or
    redelivered (several), and why the contract forbids that (empty when it allows it)."""
    effects = len(history.effects)
    if effects == 1:
        return "completed", ""
    overlap = _overlap(history)
    if overlap is not None:
        first, second = overlap
        assert first.last_effect is not None
        reasons = []
        if contract.overlap == "never":
            reasons.append("the contract says overlap = never")
        if contract.delivery != "at-least-once":
            reasons.append(f"{effects} effects under a {contract.delivery} contract")
        if not reasons:
            return "overlapped", ""
        return "overlapped", (f"{effects} effects from executions that worked at once: {second.who()} claimed it at "
                              f"{run.at(second.claim)} while {first.who()} (claimed at {run.at(first.claim)}) "
                              f"was still working on it, up to its effect at {run.at(first.last_effect)}; "
                              + "; ".join(reasons))
    if contract.delivery != "at-least-once":
        return "redelivered", f"{effects} effects under a {contract.delivery} contract"
    return "redelivered", ""


def _gone(history: JobHistory, contract: Contract, where: str) -> tuple[str, str]:
    """A job never effected that the queue no longer holds: lost, unless its owner died and the contract
    lets the queue forget such a job (on_owner_loss = drop)."""
    dead = _owner_died(history) if contract.on_owner_loss != "redeliver" else None
    fault = dead.died_by if dead is not None else None
    if dead is None or fault is None:
        return "lost", f"enqueued but never effected, and the queue reports it {where}"
    if contract.on_owner_loss == "drop" and where == "absent":
        return "dropped", ""
    kept = "kept no record of its failure" if contract.on_owner_loss == "fail" else f"reports it {where}, not gone"
    return "lost", (f"enqueued but never effected, and the queue reports it {where}: its owner {dead.who()} died "
                    f"(fault {fault.id}, {fault.kind} {fault.target}) and the contract says on_owner_loss = "
                    f"{contract.on_owner_loss}, but the queue {kept}")


def _completion_proven(history: JobHistory) -> bool:
    """Is a completion of the job proven: an ack the queue accepted (the worker's word or the control's
    answer), a completion in the queue's own record, or a final snapshot that shows it done? A job the
    snapshot does not show is not one: a snapshot that leaves out in-flight jobs hides a stuck one."""
    return history.completion_proven or (history.snapshot or {}).get("state") == "done"


def _unproven(history: JobHistory, contract: Contract) -> tuple[str, str]:
    """An effected job that no completion proves and the final snapshot does not show: dropped where its
    owner died and the contract lets the queue forget such a job (on_owner_loss = drop), else unknown (it
    may have completed, or be stuck where the snapshot does not look; `unproven_note` says which)."""
    if contract.on_owner_loss == "drop" and _owner_died(history) is not None:
        return "dropped", ""
    return "unknown", ""


def unproven_note(history: JobHistory) -> str:
    """Why a job the final snapshot took is `unknown`: its effects are in the ledger, its completion is not."""
    state = (history.snapshot or {}).get("state", "absent")
    dead = _owner_died(history)
    fault = dead.died_by if dead is not None else None
    owner = (f"; its owner {dead.who()} died holding it (fault {fault.id}, {fault.kind} {fault.target}) and no "
             "worker claimed it since" if dead is not None and fault is not None else "")
    made = "its effect" if len(history.effects) == 1 else f"{len(history.effects)} effects"
    return (f"{history.job} made {made}, but no completion of it is proven: no ack the queue accepted, no "
            "answer of the control's completion() that the queue took one (accepted or done), no completion in the "
            f"queue's own record, and the final snapshot shows it {state}, not done{owner}. A job missing from a "
            "snapshot may have completed, or be held where the snapshot does not look, so it is not counted "
            "completed (`chaos target check` tests that a snapshot shows a claimed job)")


def unsettled_for(history: JobHistory, bound: float) -> float | None:
    """Seconds between a fault taking the job's owner and the final snapshot, when the job was still
    waiting for its recovery and the recovery bound had not yet passed then; else None."""
    if history.lost_owner_at is None or history.snapshot_at is None:
        return None
    elapsed = history.snapshot_at - history.lost_owner_at
    return elapsed if elapsed < bound else None


def _overlap(history: JobHistory) -> tuple[Execution, Execution] | None:
    """Two effecting executions that worked at once: one claimed the job before the other's last effect.
    (An execution is at work from its claim to its last effect; what it does after, settling its ack, is
    not work on the job.) A sweep in claim order; None when there are none."""
    reach: Execution | None = None  # the effecting execution whose last effect is latest so far
    for execution in history.executions:  # in claim order
        last = execution.last_effect
        if last is None:
            continue
        if reach is not None and reach.last_effect is not None and reach.last_effect.seq > execution.claim.seq:
            return reach, execution
        if reach is None or reach.last_effect is None or last.seq > reach.last_effect.seq:
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


def _witness(history: JobHistory, run: RunHistory) -> list[dict[str, Any]]:
    """The job's events plus the faults and process events of every worker that touched it, and the
    backend's (and other global) events during the job's life; the last WITNESS_LIMIT of them.

    Each source list is already in ledger order, so only its last WITNESS_LIMIT entries (within the
    window) can make the cut: a witness costs O(WITNESS_LIMIT) per source, whatever the ledger's size.
    """
    related = history.events[-WITNESS_LIMIT:]
    for worker in history.workers():
        related += run.context.get(worker, [])[-WITNESS_LIMIT:]
    if history.events:
        first, last = history.events[0].seq, history.events[-1].seq
        for key in (BACKEND, GLOBAL):
            around = run.context.get(key, [])
            lo = bisect.bisect_left(around, first, key=_seq)
            hi = bisect.bisect_right(around, last, key=_seq)
            related += around[max(lo, hi - WITNESS_LIMIT):hi]
    related.sort(key=_seq)
    origin = run.origin or 0.0
    return [{"seq": e.seq, "t": round(e.mono - origin, 4), "kind": e.kind, "job": e.job, "worker": e.worker,
             "data": e.data} for e in related[-WITNESS_LIMIT:]]


def _seq(event: Event) -> int:
    return event.seq

