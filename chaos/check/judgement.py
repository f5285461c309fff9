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
  job enqueued with fail=false ending dead, is a `dead_lettered` violation; under
  owner_loss_counts_attempt, a healthy job whose every claim lost the job (its owner died, froze or was
  cut off, or the queue took it back) has spent its attempts, and only the count is judged.
- a recovery past contract.recovery_bound_s is a `recovery_bound_exceeded` violation; under a lease
  (lease_s or reservation_s) so is an owner a stop, pause or partition kept from renewing that came back
  to a job nobody reclaimed within the bound after the fault, while a worker was free. Either is
  counted from the event that took the job from its owner, the fault only when nothing before it shows
  the job gone (`chaos.check.causes`), and its witness starts there.
- `claim_after_completion`: a claim after the queue accepted a completion of the job
  (`chaos.check.reruns`), forbidden under every delivery contract unless rerun_after_completion = allowed.
- `heartbeat_gap` (with a contract lease_s or reservation_s): an owner whose consecutive accepted
  extensions (or its claim and first extension) were further apart than that bound, plus the tolerance,
  with no fault on it to explain the gap: it held the job past its lease, and only a queue that failed to
  expire it let the next extension succeed.
- `premature_reclaim` (proven by `chaos.check.scan`): where the contract has lease_s and no heartbeat_s (a
  lease nobody renews), a reclaim at or after the owner's lease end (less the tolerance) is none: the lease
  ran out, and `overlap` decides what the two owners then did.
- `early_reclaim` (with a contract lease_s): a claim that took the job from an owner that had not released
  it, sooner than the owner's lease allowed: before its last accepted claim or extension plus lease_s,
  less contract.reclaim_tolerance_s. (A kill does not excuse it: a lease outlives its owner.) Under
  lease_scope = worker an extension is any accepted heartbeat of the owner's worker (`chaos.check.scan`).
- owner loss (contract.on_owner_loss, for a job whose last owner died: a kill or restart ended its
  execution while it held the job, and nothing before shows the job had left it, `chaos.check.causes`):
  under "fail" a job that ends dead is the promise kept (`dead_lettered` with no alarm, whatever its
  attempts); under "drop" a job gone from the queue (absent) with no effect is `dropped`, not `lost`; under
  either, a claim after the owner died is `redelivered_after_owner_loss`. A job gone without its owner
  dying is `lost`, and one pending or claimed past the bound `stuck`, always.
  The bound of a job still waiting counts from the event that took it from its owner, as a recovery's does;
  a message names the fault only when nothing before it shows the job gone, and its witness starts there.

Event-proven anomalies (premature or early reclaim, stale ack or extension, effect after lease loss, work
after known loss, recovery bound) are judged even when the final snapshot is missing; outcome-based ones
(lost, stuck, redelivered, overlapped, dead letters) need the snapshot. Allowed anomalies (a late effect
under after-lease-loss + at-least-once, a stale ack or extension under stale_ack = accepted, work after
a known loss without a watchdog) are returned apart, with their exposure, for `Verdict.anomalies`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from typing import Any

from chaos import events
from chaos.check import proofs
from chaos.check.capacity import free_seconds
from chaos.check.causes import Cause, earlier_loss
from chaos.check.history import GLOBAL, Execution, FaultHistory, Finding, JobHistory, Proof, Return, RunHistory
from chaos.check.reruns import claim_after_completion
from chaos.check.verdict import Violation
from chaos.contract import Contract
from chaos.events import BACKEND, Event
from chaos.faults import fault_kind

WITNESS_LIMIT = 200
AFTER_COMPLETION = "claim_after_completion"


def judge_job(history: JobHistory, contract: Contract,
              run: RunHistory) -> tuple[str, list[Violation], list[dict[str, Any]]]:
    """The job's outcome, the violations it shows under the contract, and the anomalies the contract allows."""
    outcome, reason, why = _outcome(history, contract, run)
    gaps = _heartbeat_gaps(history, contract, run)
    rerun = _rerun_after_owner_died(history, contract, run)
    rerun_of_done = claim_after_completion(history, run) if history.completions or history.completion_proven else None
    if (not reason and not history.findings and not history.recoveries and not history.reclaims and not gaps
            and rerun is None and rerun_of_done is None and not history.returns):
        return outcome, [], []  # the common case
    full: list[dict[str, Any]] | None = None

    def violation(kind: str, message: str, detail: dict[str, Any] | None, proof: Why,
                  since: tuple[int, float] | None = None) -> Violation:
        """`since`: the (seq, time) of the event that decided it: the witness starts with it, then what
        happened after it (a queue's record reaches the ledger a moment after what it records). `proof`: the
        rule's own, built now that the violation is emitted; the witness holds every event it cites."""
        nonlocal full
        if full is None:
            full = _witness(history, run)
        witness = full
        if since is not None:
            after = round(since[1] - (run.origin or 0.0), 4)
            witness = ([e for e in full if e["seq"] == since[0]]
                       + [e for e in full if e["seq"] > since[0] or (e["t"] > after and e["seq"] != since[0])])
        if proof is None:
            return Violation(kind, history.job, message, witness, dict(detail or {}))
        premises, conclusion, cited = proof()
        shown = {e["seq"] for e in witness}
        missing = [e for e in cited if e.seq not in shown]
        if missing:  # cut by WITNESS_LIMIT: the proof's events stay in the witness whatever its length
            witness = sorted(witness + _entries(missing, history, run), key=_entry_seq)
        return Violation(kind, history.job, message, witness, dict(detail or {}), premises, conclusion)

    decided = _decided_by(history, outcome, run) if reason else None
    since = (decided.event.seq, decided.at) if decided is not None else None
    found = [violation(outcome, reason, None, why, since)] if reason else []
    allowed: list[dict[str, Any]] = []
    for finding in history.findings:
        if _lease_ran_out(finding, contract):
            continue  # the lease did what it is for: the overlap rules judge what the two owners then did
        if _allowed(finding.kind, contract):
            allowed.append({"kind": finding.kind, "job": history.job, "exposure_s": _round(finding.exposure_s),
                            "message": f"{finding.message} ({_allowed_by(finding.kind, contract)})",
                            **({"source": finding.detail["source"]} if "source" in finding.detail else {})})
        else:
            found.append(violation(finding.kind, f"{finding.message}{_forbidden_by(finding.kind, contract)}",
                                   finding.detail, finding.proof))
    if rerun_of_done is not None:
        if contract.rerun_after_completion == "allowed":
            allowed.append({"kind": AFTER_COMPLETION, "job": history.job, "exposure_s": rerun_of_done.detail["after_s"],
                            "message": f"{rerun_of_done.message} (allowed: rerun_after_completion = allowed)"})
        else:
            found.append(violation(AFTER_COMPLETION, f"{rerun_of_done.message}; the contract says "
                                   f"rerun_after_completion = {contract.rerun_after_completion} (at-least-once allows "
                                   "a redelivery when the ack was lost or refused, not after the queue accepted it)",
                                   rerun_of_done.detail,
                                   partial(proofs.claim_after_completion, run, rerun_of_done.completion,
                                                                         rerun_of_done.claim),
                                   (rerun_of_done.completion.seq, rerun_of_done.completion.mono)))
    for kind, message, detail, proof, since in _late_recoveries(history, contract, run):
        found.append(violation(kind, message, detail, proof, since))
    found += [violation("early_reclaim", *early) for early in _early_reclaims(history, contract, run)]
    found += [violation("heartbeat_gap", *gap) for gap in gaps]
    if rerun is not None:
        found.append(violation("redelivered_after_owner_loss", *rerun))
    return outcome, found, allowed


Why = Callable[[], Proof] | None  # a rule's minimal proof, built only once its violation is emitted
Late = tuple[str, str, dict[str, Any], Why, tuple[int, float] | None]
Judged = tuple[str, dict[str, Any], Why]  # a violation's message, its detail and its proof


def _late_recoveries(history: JobHistory, contract: Contract, run: RunHistory) -> list[Late]:
    """Each reclaim later than the recovery bound after the job lost its owner, and (under a lease) each
    owner that came back to a job nobody had reclaimed though its lease had run out a bound before: both
    `recovery_bound_exceeded`, counting only the time some worker was free to take the job."""
    late: list[Late] = []
    bound = contract.recovery_bound_s
    for recovery in history.recoveries:
        fault = run.faults.get(recovery.fault)
        owner = next((e for e in history.executions if e.superseded_by is not None
                      and e.superseded_by.claim.seq == recovery.claim_seq), None)
        cause = earlier_loss(history, owner, fault, run) if owner is not None and fault is not None else None
        claimer = next((e for e in history.executions if e.claim.seq == recovery.claim_seq), None)
        claimed = claimer.claim.mono if claimer is not None else None
        seconds = recovery.seconds if cause is None or claimed is None else claimed - cause.at
        free = _waited_with_a_worker_free(claimed, seconds, run) if seconds > bound else 0.0
        if seconds <= bound or free <= bound:
            continue
        lost_owner = recovery.owner if owner is None else owner.who()  # by its label, where it has one
        by = recovery.by if claimer is None else claimer.who()
        proof = partial(proofs.late_recovery, run, fault, cause, lost_owner, claimer, free, bound)
        detail: dict[str, Any] = {"recovery_s": round(seconds, 4), "bound_s": bound, "fault": recovery.fault,
                                  "owner": recovery.owner, "by": recovery.by}
        what = f"{fault.kind} {fault.target}" if fault is not None else "?"
        if cause is None:
            late.append(("recovery_bound_exceeded", f"reclaimed by {by} {seconds:.3f}s after fault "
                         f"{recovery.fault} ({what}) took its owner {lost_owner}, past the recovery bound of "
                         f"{bound}s", detail, proof, None))
            continue
        detail.update(fault=None, after_fault=recovery.fault, cause=cause.event.kind, cause_seq=cause.event.seq)
        late.append(("recovery_bound_exceeded", f"reclaimed by {by} {seconds:.3f}s after {cause.what}, "
                     f"past the recovery bound of {bound}s; {cause.came_after()}", detail, proof,
                     (cause.event.seq, cause.at)))
    late += [_unreclaimed(ret, contract, run) for ret in history.returns if _owed(ret, contract, run)]
    return late


def _owed(ret: Return, contract: Contract, run: RunHistory) -> bool:
    """Did the queue owe a reclaim before the owner came back: a lease contract (lease_s or reservation_s;
    an owner-scoped one is exempt while the owner lives), a fault that kept the owner from renewing without
    ending it (a stop, a pause, a partition of it), and a wait past the bound with a worker free that long?
    The wait counts from where a reclaim's recovery would (the fault, or the earlier event that took the job
    from its owner): the bound covers the lease, as it does for a reclaim, so a queue that never reclaims is
    held to no laxer a bound than one that reclaims late."""
    fault = run.faults.get(ret.fault)
    if contract.renewal_bound_s is None or fault is None:
        return False
    kind = fault_kind(fault.kind)
    if kind.ends_executions or kind.reach != "target":
        return False
    start, _ = _unclaimed_since(ret, fault, run)
    bound = contract.recovery_bound_s
    return ret.back.mono - start > bound and free_seconds(run, start, ret.back.mono) > bound


def _unclaimed_since(ret: Return, fault: FaultHistory, run: RunHistory) -> tuple[float, Cause | None]:
    """When the job left its owner: when the fault took it, or an earlier event (`chaos.check.causes`)."""
    cause = earlier_loss(run.jobs[ret.owner.job], ret.owner, fault, run)
    return (cause.at, cause) if cause is not None else (ret.lost_at, None)


def _unreclaimed(ret: Return, contract: Contract, run: RunHistory) -> Late:
    """The `recovery_bound_exceeded` of an owner that came back to a job the queue owed a new owner."""
    lease = contract.renewal_bound_s or 0.0
    fault = run.faults[ret.fault]
    start, cause = _unclaimed_since(ret, fault, run)
    waited = ret.back.mono - start
    free = free_seconds(run, start, ret.back.mono)
    origin = run.origin or 0.0
    key = "lease_s" if contract.lease_s is not None else "reservation_s"
    came_back = "its accepted ack" if ret.back.kind == events.PROBE_ACK else "an accepted lease extension"
    detail: dict[str, Any] = {"recovery_s": round(waited, 4), "bound_s": contract.recovery_bound_s,
                              "fault": ret.fault, "owner": ret.owner.worker, "by": None,
                              "lease_end_s": round(ret.lease_from + lease - origin, 4),
                              "back_s": round(ret.back.mono - origin, 4), "free_s": round(free, 4)}
    tail = (f"for {waited:.3f}s, until its owner came back at {run.at(ret.back)} ({came_back}), some worker free "
            f"for {free:.3f}s of that: past the recovery bound of {contract.recovery_bound_s}s. Under a lease the "
            "queue owes a reclaim once the lease runs out, whether or not the owner returns")
    proof = partial(proofs.unreclaimed, run, ret, fault, cause, key, lease, free, contract.recovery_bound_s)
    if cause is not None:
        detail.update(fault=None, after_fault=ret.fault, cause=cause.event.kind, cause_seq=cause.event.seq)
        return ("recovery_bound_exceeded", f"nobody claimed it after {cause.what} {tail}; {cause.came_after()}",
                detail, proof, (cause.event.seq, cause.at))
    return ("recovery_bound_exceeded", f"fault {ret.fault} ({fault.kind} {fault.target}) kept its owner "
            f"{ret.owner.who()} from renewing its lease from +{ret.lost_at - origin:.3f}s (the lease ran out at "
            f"+{ret.lease_from + lease - origin:.3f}s: its last accepted claim or extension at "
            f"+{ret.lease_from - origin:.3f}s plus {key} = {lease}s), and nobody claimed it {tail}", detail, proof,
            None)


def _waited_with_a_worker_free(claimed: float | None, seconds: float, run: RunHistory) -> float:
    """How long of the recovery some worker was free to take the job (`chaos.check.capacity`)."""
    if claimed is None:
        return seconds
    return free_seconds(run, claimed - seconds, claimed)


def _rerun_after_owner_died(history: JobHistory, contract: Contract, run: RunHistory) -> Judged | None:
    """Under on_owner_loss = fail or drop, the first claim made after a kill or restart ended the execution
    that held the job: the queue promised never to run such a job again. None when there is none."""
    if contract.on_owner_loss == "redeliver":
        return None
    executions = history.executions  # in claim order
    for dead, claimer in pairwise(executions):
        fault = dead.died_by
        if (fault is None or fault.applied is None or claimer.since < fault.seq
                or earlier_loss(history, dead, fault, run) is not None):
            continue  # no owner died holding it: the job had left it before (`chaos.check.causes`)
        after = max(0.0, claimer.at - fault.applied.mono)
        promise = "recorded failed" if contract.on_owner_loss == "fail" else "dropped"
        return (f"{claimer.who()} claimed it at {run.at(claimer.claim)}, {after:.3f}s after fault {fault.id} "
                f"({fault.kind} {fault.target}) ended the execution of its owner {dead.who()}: the contract says "
                f"on_owner_loss = {contract.on_owner_loss} (a job whose owner dies is {promise}, never run again), "
                "but the queue delivered it again",
                {"fault": fault.id, "owner": dead.worker, "owner_token": dead.token, "claimer": claimer.worker,
                 "claimer_token": claimer.token, "after_s": round(after, 4),
                 "on_owner_loss": contract.on_owner_loss},
                partial(proofs.redelivered_after_owner_loss, run, dead, fault, claimer, contract.on_owner_loss))
    return None


def _death(history: JobHistory, run: RunHistory) -> tuple[Execution, FaultHistory, Cause | None] | None:
    """The job's last execution (in claim order) when a kill or restart ended it, that fault, and the earlier
    event that had already taken the job from it (`chaos.check.causes`): then the owner did not die holding
    the job, and the promise for an owner loss (on_owner_loss) is not what decided its outcome."""
    last = history.executions[-1] if history.executions else None
    if last is None or last.died_by is None:
        return None
    return last, last.died_by, earlier_loss(history, last, last.died_by, run)


def _decided_by(history: JobHistory, outcome: str, run: RunHistory) -> Cause | None:
    """The event before a fault that decided a stuck or lost job's outcome (`chaos.check.causes`): its
    message names it, and its witness starts there."""
    if outcome == "stuck":
        return lost_since(history, run)[1]
    death = _death(history, run) if outcome == "lost" else None
    return death[2] if death is not None else None


def _owner_died(history: JobHistory, run: RunHistory) -> Execution | None:
    """The job's last execution, when a kill or restart ended it holding the job."""
    death = _death(history, run)
    return death[0] if death is not None and death[2] is None else None


def _heartbeat_gaps(history: JobHistory, contract: Contract, run: RunHistory) -> list[Judged]:
    """Each execution's longest unexplained gap between accepted extensions, when it is past the lease (the
    reports' times are upper bounds of the commits, hence the tolerance)."""
    bound = contract.renewal_bound_s
    if bound is None:
        return []
    tolerance = contract.lease_tolerance_s if contract.lease_tolerance_s is not None else 0.25 * bound
    key = "lease_s" if contract.lease_s is not None else "reservation_s"
    gaps: list[Judged] = []
    for execution in history.executions:
        gap = execution.gap
        if gap is None or gap.seconds <= bound + tolerance:
            continue
        gaps.append((f"{execution.who()} held it {gap.seconds:.3f}s between accepted extensions (from "
                     f"{run.at(gap.since)} to {run.at(gap.until)}), past {key} = {bound}s (tolerance {tolerance:.3f}s) "
                     "with no fault on it to explain the gap: its lease had run out while it worked, and the queue "
                     "still accepted the next extension",
                     {"worker": execution.worker, "token": execution.token, "gap_s": round(gap.seconds, 4),
                      key: bound}, partial(proofs.heartbeat_gap, run, execution, gap, key, bound)))
    return gaps


def _early_reclaims(history: JobHistory, contract: Contract, run: RunHistory) -> list[Judged]:
    """Each reclaim reported sooner than the owner's lease allowed (the reports' times are upper bounds of
    the commits, hence the tolerance); none without a lease in the contract."""
    lease = contract.lease_s
    if lease is None:
        return []
    tolerance = contract.reclaim_tolerance_s
    early: list[Judged] = []
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
                       "owner_token": owner.token, "early_s": round(soon, 4), "lease_s": lease},
                      partial(proofs.early_reclaim, run, owner, claimer, lease)))
    return early


def _lease_ran_out(finding: Finding, contract: Contract) -> bool:
    """Is this premature_reclaim a reclaim after the owner's lease ran out, where the contract promises no
    renewal (lease_s without heartbeat_s: rescue by age)? Premature means reclaimed while its owner was alive
    and within its lease. A lease the contract says is renewed (heartbeat_s) never runs out under a live,
    unfaulted owner, so a reclaim from one is premature whenever it comes."""
    lease = contract.lease_s
    return (finding.kind == "premature_reclaim" and lease is not None and contract.heartbeat_s is None
            and finding.renewed_s is not None and finding.renewed_s >= lease - contract.reclaim_tolerance_s)


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
    since = lost_since(history, run)[0]
    if since is None:
        since = min((e.mono for e in history.events if e.kind == events.ENQUEUE), default=history.snapshot_at)
    return free_seconds(run, since, history.snapshot_at, busy_with_jobs=False)


Outcome = tuple[str, str, Why]  # the outcome, why the contract forbids it (empty when it is fine), its proof


def _outcome(history: JobHistory, contract: Contract, run: RunHistory) -> Outcome:
    """The job's outcome and, when the contract forbids it, why (empty when it is fine) and its proof."""
    effects = len(history.effects)
    snap = history.snapshot or {}
    where = snap.get("state", "absent")
    if not history.enqueued:
        return ("unexpected", f"{effects} effect(s) for a job that was never enqueued",
                partial(proofs.unexpected, run, history))
    if not run.snapshot_taken:
        return "unknown", "", None
    if where == "dead":
        if contract.on_owner_loss == "fail" and _owner_died(history, run) is not None:
            return "dead_lettered", "", None  # the promise kept: its owner died, and the queue recorded it failed
        reasons = _dead_letter_reasons(history, contract, snap)
        return "dead_lettered", "; ".join(reasons), partial(proofs.dead_lettered, run, history, reasons)
    if where in ("pending", "claimed"):
        if unsettled_for(history, contract.recovery_bound_s, run) is not None:
            return "unsettled", "", None  # its owner was lost too recently: not judged
        free = free_while_waiting(history, run)
        bound = contract.recovery_bound_s
        if free <= bound:
            return "unsettled", "", None  # nobody was free to take it for as long as the bound: not judged
        owner = f", claimed by {snap['owner']}" if snap.get("owner") else ""
        claims = len(history.executions)
        cause = lost_since(history, run)[1]
        left = f"; it had waited since {cause.what}, and {cause.came_after()}" if cause is not None else ""
        return "stuck", (f"still {where}{owner} at the end of the run, past the recovery bound of "
                         f"{bound}s, after {claims} claim(s) and {effects} effect(s){left}"), (
            partial(proofs.stuck, run, history, cause, free, bound))
    if effects == 0:
        return _gone(history, contract, where, run)
    outcome, reason, why = _effected(history, contract, run)
    if reason or _completion_proven(history):
        return outcome, reason, why  # a violation the effects prove needs no completion
    return _unproven(history, contract, run), "", None


def _effected(history: JobHistory, contract: Contract, run: RunHistory) -> Outcome:
    """What the job's effects make it, were a completion of it proven: completed (one effect), overlapped or
    redelivered (several), and why the contract forbids that (empty when it allows it)."""
    effects = len(history.effects)
    if effects == 1:
        return "completed", "", None
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
            return "overlapped", "", None
        return "overlapped", (f"{effects} effects from executions that worked at once: {second.who()} claimed it at "
                              f"{run.at(second.claim)} while {first.who()} (claimed at {run.at(first.claim)}) "
                              f"was still working on it, up to its effect at {run.at(first.last_effect)}; "
                              + "; ".join(reasons)), partial(proofs.overlapped, run, first, second, reasons)
    if contract.delivery != "at-least-once":
        return ("redelivered", f"{effects} effects under a {contract.delivery} contract",
                partial(proofs.redelivered, run, history, contract.delivery))
    return "redelivered", "", None


def _gone(history: JobHistory, contract: Contract, where: str, run: RunHistory) -> Outcome:
    """A job never effected that the queue no longer holds: lost, unless its owner died holding it and the
    contract lets the queue forget such a job (on_owner_loss = drop)."""
    death = _death(history, run)
    cause = death[2] if death is not None else None
    if cause is not None:  # it left its owner before the fault: say so
        rule = (f", so on_owner_loss = {contract.on_owner_loss} (for a job whose owner dies holding it) does not "
                "apply" if contract.on_owner_loss != "redeliver" else "")
        return "lost", (f"enqueued but never effected, and the queue reports it {where}: {cause.what}{rule}; "
                        f"{cause.came_after()}"), partial(proofs.lost, run, history, cause, None)
    if death is None or contract.on_owner_loss == "redeliver":
        return ("lost", f"enqueued but never effected, and the queue reports it {where}",
                partial(proofs.lost, run, history, None, death[0] if death is not None else None))
    dead, fault, _ = death
    if contract.on_owner_loss == "drop" and where == "absent":
        return "dropped", "", None
    kept = "kept no record of its failure" if contract.on_owner_loss == "fail" else f"reports it {where}, not gone"
    return "lost", (f"enqueued but never effected, and the queue reports it {where}: its owner {dead.who()} died "
                    f"(fault {fault.id}, {fault.kind} {fault.target}) and the contract says on_owner_loss = "
                    f"{contract.on_owner_loss}, but the queue {kept}"), partial(proofs.lost, run, history, None, dead)


def _completion_proven(history: JobHistory) -> bool:
    """Is a completion of the job proven: an ack the queue accepted (the worker's word or the control's
    answer), a completion in the queue's own record, or a final snapshot that shows it done? A job the
    snapshot does not show is not one: a snapshot that leaves out in-flight jobs hides a stuck one."""
    return history.completion_proven or (history.snapshot or {}).get("state") == "done"


def _unproven(history: JobHistory, contract: Contract, run: RunHistory) -> str:
    """An effected job that no completion proves and the final snapshot does not show: dropped where its
    owner died and the contract lets the queue forget such a job (on_owner_loss = drop), else unknown (it
    may have completed, or be stuck where the snapshot does not look; `unproven_note` says which)."""
    if contract.on_owner_loss == "drop" and _owner_died(history, run) is not None:
        return "dropped"
    return "unknown"


def unproven_note(history: JobHistory, run: RunHistory) -> str:
    """Why a job the final snapshot took is `unknown`: its effects are in the ledger, its completion is not."""
    state = (history.snapshot or {}).get("state", "absent")
    death = _death(history, run)
    owner = ""
    if death is not None:
        dead, fault, cause = death
        owner = (f"; its owner {dead.who()} died holding it (fault {fault.id}, {fault.kind} {fault.target}) and no "
                 "worker claimed it since" if cause is None else f"; {cause.what}, no worker claimed it since, and "
                 f"{cause.came_after()}")
    made = "its effect" if len(history.effects) == 1 else f"{len(history.effects)} effects"
    return (f"{history.job} made {made}, but no completion of it is proven: no ack the queue accepted, no "
            "answer of the control's completion() that the queue took one (accepted or done), no completion in the "
            f"queue's own record, and the final snapshot shows it {state}, not done{owner}. A job missing from a "
            "snapshot may have completed, or be held where the snapshot does not look, so it is not counted "
            "completed (`chaos target check` tests that a snapshot shows a claimed job)")


def lost_since(history: JobHistory, run: RunHistory) -> tuple[float | None, Cause | None]:
    """When the job still waiting for its recovery lost its owner: when a fault took that owner, or the
    earlier event that had already taken the job from it (`chaos.check.causes`), and that event."""
    if history.lost_owner_at is None or history.lost is None or history.latest is None:
        return history.lost_owner_at, None
    fault = run.faults.get(history.lost[0])
    cause = earlier_loss(history, history.latest, fault, run) if fault is not None else None
    return (cause.at, cause) if cause is not None else (history.lost_owner_at, None)


def unsettled_for(history: JobHistory, bound: float, run: RunHistory) -> float | None:
    """Seconds between the job losing its owner (`lost_since`) and the final snapshot, when the job was
    still waiting for its recovery and the recovery bound had not yet passed then; else None."""
    since = lost_since(history, run)[0]
    if since is None or history.snapshot_at is None:
        return None
    elapsed = history.snapshot_at - since
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


def _dead_letter_reasons(history: JobHistory, contract: Contract, snap: dict[str, Any]) -> list[str]:
    claims = len(history.executions)
    reasons = []
    if contract.max_attempts is not None and claims != contract.max_attempts:
        counted = f" (the queue counted {snap['attempts']})" if snap.get("attempts") is not None else ""
        reasons.append(f"dead-lettered after {claims} attempt(s){counted}, but the contract says "
                       f"max_attempts = {contract.max_attempts}")
    if history.poison is False and not (contract.owner_loss_counts_attempt
                                        and all(_lost_its_job(e) for e in history.executions)):
        spent = (" and not every attempt lost its owner (owner_loss_counts_attempt)"
                 if contract.owner_loss_counts_attempt else "")
        reasons.append(f"dead-lettered after {claims} attempt(s) although it was not a poison job "
                       f"(enqueued with fail=false){spent}")
    return reasons


def _lost_its_job(execution: Execution) -> bool:
    """Did the execution end without giving the job up on its own account (no accepted ack, no abandon
    other than one because it had lost the job): its owner died, froze or was cut off, or the queue took
    the job from it? Under owner_loss_counts_attempt such an execution spent an attempt."""
    end = execution.end
    if end is None or execution.ended_by not in ("ack", "abandon"):
        return True
    if execution.ended_by == "ack":
        return end.data.get("ok") is not True
    return end.data.get("reason") == "lost"


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
    return _entries(related[-WITNESS_LIMIT:], history, run)


def _entries(related: list[Event], history: JobHistory, run: RunHistory) -> list[dict[str, Any]]:
    """Witness entries; one that belongs to an execution (a probe, a queue record naming a token) says its
    label (`chaos.check.labels`), as messages name it."""
    origin = run.origin or 0.0
    labels = run.labels
    names = {str(e.data["library_id"]): e.worker for e in history.events
             if e.kind.startswith(events.PROBE_PREFIX) and e.data.get("library_id")}
    found: list[dict[str, Any]] = []
    for e in related:
        entry = {"seq": e.seq, "t": round(e.mono - origin, 4), "kind": e.kind, "job": e.job, "worker": e.worker,
                 "data": e.data}
        label = None
        if e.kind.startswith(events.PROBE_PREFIX):
            label = labels.of_event(e)
        elif e.kind.startswith(events.QUEUE_PREFIX) and e.data.get("token") is not None:
            label = labels.of(e.job, names.get(e.worker or "", e.worker), e.data["token"])
        if label is not None:
            entry["label"] = label
        found.append(entry)
    return found


def _seq(event: Event) -> int:
    return event.seq


def _entry_seq(entry: dict[str, Any]) -> int:
    return int(entry["seq"])

