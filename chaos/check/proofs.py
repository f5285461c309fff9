"""A violation's minimal proof: the 2-4 premises the rule that fired relied on, and what follows from them.

Each rule hands the events it used to one function here, at the moment it emits a violation (never on the
path where nothing is wrong), and gets back the premises, each a sentence tied to its event (its seq, and
its time since the run's first event, as the witness shows it), and the conclusion. A derived fact, such as
where a lease ran out, has no event of its own: its seq is None and its time is set. The wording of each
kind lives here, once; the witness keeps the whole history.
"""

from __future__ import annotations

from chaos import events
from chaos.check.causes import Cause
from chaos.check.history import Execution, FaultHistory, Gap, JobHistory, Proof, Return, RunHistory
from chaos.check.verdict import Premise
from chaos.events import Event
from chaos.faults import fault_kind


class _Steps:
    """Premises in the making, with the events they cite."""

    __slots__ = ("origin", "premises", "cited")

    def __init__(self, origin: float) -> None:
        self.origin = origin
        self.premises: list[Premise] = []
        self.cited: list[Event] = []

    def at(self, mono: float) -> str:
        return f"+{mono - self.origin:.3f} s"

    def event(self, event: Event, says: str) -> _Steps:
        """A premise the event shows; `{at}` in `says` reads the event's time."""
        self.premises.append(Premise(says.replace("{at}", self.at(event.mono)), event.seq,
                                     round(event.mono - self.origin, 4)))
        self.cited.append(event)
        return self

    def derived(self, mono: float, says: str) -> _Steps:
        """A premise derived from events (no event of its own shows it); `{at}` reads `mono`."""
        self.premises.append(Premise(says.replace("{at}", self.at(mono)), None, round(mono - self.origin, 4)))
        return self

    def then(self, conclusion: str) -> Proof:
        return Proof(tuple(self.premises), conclusion, tuple(self.cited))


def _steps(run: RunHistory) -> _Steps:
    return _Steps(run.origin or 0.0)


def _label(run: RunHistory, event: Event) -> str:
    """The execution an event belongs to, by its label, else its worker's name."""
    return run.labels.of_event(event) or event.worker or "?"


def _snapshot(history: JobHistory) -> Event | None:
    return next((e for e in reversed(history.events) if e.kind == events.SNAPSHOT), None)


def _enqueued(history: JobHistory) -> Event | None:
    return next((e for e in history.events if e.kind == events.ENQUEUE), None)


def _fault_event(fault: FaultHistory) -> Event:
    journal = fault.journal
    assert journal is not None, "a fault is known from its journal entry"
    return fault.applied or journal


def _fault_name(fault: FaultHistory) -> str:
    return f"fault {fault.id} ({fault.kind} {fault.target})"


def _cause(steps: _Steps, cause: Cause) -> _Steps:
    """The event before the fault that took the job from its owner (`chaos.check.causes`); its words say
    when it happened by the record's own clock, its time is its entry's in the ledger, as the witness's."""
    return steps.event(cause.event, f"the job left its owner first: {cause.what}")


def _final(steps: _Steps, run: RunHistory, history: JobHistory, also: str = "") -> _Steps:
    """The final snapshot's word on the job: its entry, or (a snapshot lists only the jobs the queue still
    has) the snapshot that does not list it."""
    snapshot = _snapshot(history)
    snap = history.snapshot or {}
    state = snap.get("state", "absent")
    if snapshot is None:
        taken = run.snapshot_taken
        return steps if taken is None else steps.event(taken, f"the final snapshot at {{at}} does not list it{also}")
    if snap.get("owner"):
        state = f"claimed by {snap['owner']}" if state == "claimed" else f"{state}, claimed by {snap['owner']}"
    return steps.event(snapshot, f"the final snapshot at {{at}} shows it {state}{also}")


# -- outcomes (chaos.check.judgement._outcome) ---------------------------------------------------------------


def stuck(run: RunHistory, history: JobHistory, cause: Cause | None, free_s: float, bound: float) -> Proof:
    steps = _steps(run)
    owner = history.latest
    if cause is not None:
        _cause(steps, cause)
    else:
        if owner is not None:
            steps.event(owner.claim, f"{owner.who()} claimed {history.job} at {{at}}")
        else:
            enqueued = _enqueued(history)
            if enqueued is not None:
                steps.event(enqueued, f"{history.job} was enqueued at {{at}}")
        fault = run.faults.get(history.lost[0]) if history.lost is not None else None
        if fault is not None and owner is not None:
            steps.event(_fault_event(fault), f"{_fault_name(fault)} took its owner {owner.who()} at {{at}}")
    steps.derived(history.snapshot_at or 0.0, f"no claim since, while a worker was free for {free_s:.3f} s "
                                              f"(bound {bound} s)")
    return _final(steps, run, history).then("the queue left the job unowned past its recovery bound")


def lost(run: RunHistory, history: JobHistory, cause: Cause | None, dead: Execution | None) -> Proof:
    steps = _steps(run)
    if cause is not None:
        _cause(steps, cause)
    else:
        enqueued = _enqueued(history)
        if enqueued is not None:
            steps.event(enqueued, f"{history.job} was enqueued at {{at}}")
        fault = dead.died_by if dead is not None else None
        if dead is not None and fault is not None:
            steps.event(_fault_event(fault), f"{_fault_name(fault)} ended its owner {dead.who()} at {{at}}")
        elif history.latest is not None:
            steps.event(history.latest.claim, f"{history.latest.who()} claimed it at {{at}}")
    _final(steps, run, history, ", and no effect of it was reported")
    return steps.then("the queue let go of a job that never took effect")


def unexpected(run: RunHistory, history: JobHistory) -> Proof:
    steps = _steps(run)
    first = history.effects[0] if history.effects else history.events[0]
    steps.event(first, f"{_label(run, first)} made an effect of {history.job} at {{at}}")
    steps.derived(history.events[-1].mono, f"no enqueue of {history.job} is in the ledger")
    return steps.then("an effect was made for a job this run never enqueued")


def redelivered(run: RunHistory, history: JobHistory, delivery: str) -> Proof:
    steps = _steps(run)
    first, second = history.effects[0], history.effects[1]
    steps.event(first, f"{_label(run, first)} made an effect of {history.job} at {{at}}")
    again = history.by_key.get((second.worker or "?", second.data.get("token")))
    if again is not None and again.claim.seq > first.seq:
        steps.event(again.claim, f"{again.who()} claimed it at {{at}}, after that effect")
    steps.event(second, f"{_label(run, second)} made another effect of it at {{at}}")
    return steps.then(f"the job took effect {len(history.effects)} times under delivery = {delivery}, "
                      "which allows one")


def overlapped(run: RunHistory, first: Execution, second: Execution, reasons: list[str]) -> Proof:
    steps = _steps(run)
    assert first.last_effect is not None and second.last_effect is not None
    steps.event(first.claim, f"{first.who()} claimed {first.job} at {{at}}")
    steps.event(second.claim, f"{second.who()} claimed it at {{at}}, while {first.who()} still worked on it")
    effects = sorted(((first.last_effect, f"{first.who()} made its effect at {{at}}, after that claim"),
                      (second.last_effect, f"{second.who()} made its effect at {{at}}")), key=lambda e: e[0].seq)
    for effect, says in effects:
        steps.event(effect, says)
    return steps.then(f"two executions worked on the job at once ({'; '.join(reasons)})")


def dead_lettered(run: RunHistory, history: JobHistory, reasons: list[str]) -> Proof:
    steps = _steps(run)
    enqueued = _enqueued(history)
    if history.poison is False and enqueued is not None:
        steps.event(enqueued, f"{history.job} was enqueued at {{at}} as no poison job (fail=false)")
    if history.executions:
        last = history.executions[-1]
        steps.event(last.claim, f"it was claimed {len(history.executions)} time(s), the last by {last.who()} "
                                "at {at}")
    attempts = (history.snapshot or {}).get("attempts")
    _final(steps, run, history, f" (the queue counted {attempts} attempt(s))" if attempts is not None else "")
    return steps.then(f"the queue dead-lettered it wrongly: {'; '.join(reasons)}")


# -- event-proven anomalies (chaos.check.scan findings) ------------------------------------------------------


def stale_ack(run: RunHistory, stale: Execution, winner: Execution, ack: Event, by_control: bool) -> Proof:
    word = " (by the control's answer)" if by_control else ""
    return (_steps(run)
            .event(winner.claim, f"{winner.who()} claimed {stale.job} at {{at}}")
            .event(stale.claim, f"{stale.who()} had claimed it at {{at}} and not released it")
            .event(ack, f"the queue accepted {stale.who()}'s ack at {{at}}{word}")
            .then("the queue accepted an ack from a claim it no longer held"))


def stale_extension(run: RunHistory, stale: Execution, winner: Execution, earlier: Event, event: Event) -> Proof:
    return (_steps(run)
            .event(winner.claim, f"{winner.who()} claimed {stale.job} at {{at}}, taking it from {stale.who()}")
            .event(earlier, f"{stale.who()}'s heartbeat was reported at {{at}}, after that claim")
            .event(event, f"the queue accepted {stale.who()}'s next lease extension at {{at}}")
            .then("the queue extended a lease it no longer granted"))


def effect_after_lease_loss(run: RunHistory, late: Execution, winner: Execution, effect: Event) -> Proof:
    return (_steps(run)
            .event(late.claim, f"{late.who()} claimed {late.job} at {{at}}")
            .event(winner.claim, f"{winner.who()} claimed it at {{at}}")
            .event(effect, f"{late.who()} made an accepted effect at {{at}}")
            .then(f"{late.who()} acted on a job it no longer owned"))


def work_after_known_loss(run: RunHistory, execution: Execution, failed: Event, effect: Event) -> Proof:
    return (_steps(run)
            .event(execution.claim, f"{execution.who()} claimed {execution.job} at {{at}}")
            .event(failed, f"{execution.who()}'s lease extension failed at {{at}}, and none succeeded after it")
            .event(effect, f"{execution.who()} made an accepted effect at {{at}}")
            .then(f"{execution.who()} went on with work it knew it had lost"))


def premature_reclaim(run: RunHistory, owner: Execution, gave_up: Event | None, claimer: Execution) -> Proof:
    """`gave_up`: the owner's abandon, reported before the claim that caused it, where there was one."""
    steps = _steps(run).event(owner.claim, f"{owner.who()} claimed {owner.job} at {{at}}")
    if gave_up is not None:
        steps.event(gave_up, f"{owner.who()} gave it up as lost at {{at}}, reported before the claim that took it")
    steps.event(claimer.claim, f"{claimer.who()} claimed it at {{at}}")
    steps.derived(claimer.claim.mono, f"no kill, stop, restart or clock fault reached {owner.worker} since its "
                                      "claim, and its process was alive")
    return steps.then("the queue took the job from a live, healthy owner")


# -- judged by the contract (chaos.check.judgement) ----------------------------------------------------------


def early_reclaim(run: RunHistory, owner: Execution, claimer: Execution, lease: float) -> Proof:
    renewed = "claim" if owner.extended_by.kind == events.PROBE_CLAIM else "extension"
    return (_steps(run)
            .event(owner.extended_by, f"{owner.who()}'s last accepted {renewed} of {owner.job} was at {{at}}")
            .derived(owner.extended_at + lease, f"its lease ran until {{at}} (lease_s = {lease} s)")
            .event(claimer.claim, f"{claimer.who()} claimed it at {{at}}")
            .then("the queue reclaimed the job before the owner's lease could have run out"))


def heartbeat_gap(run: RunHistory, execution: Execution, gap: Gap, key: str, bound: float) -> Proof:
    renewed = "claimed it" if gap.since.kind == events.PROBE_CLAIM else "had its lease extended"
    return (_steps(run)
            .event(gap.since, f"{execution.who()} {renewed} at {{at}}")
            .derived(gap.since.mono + bound, f"its lease ran out at {{at}} ({key} = {bound} s), no fault on it")
            .event(gap.until, "the queue accepted its next extension at {at}")
            .then("the queue extended a lease that had already run out"))


def redelivered_after_owner_loss(run: RunHistory, dead: Execution, fault: FaultHistory, claimer: Execution,
                                 on_owner_loss: str) -> Proof:
    return (_steps(run)
            .event(dead.claim, f"{dead.who()} claimed {dead.job} at {{at}}")
            .event(_fault_event(fault), f"{_fault_name(fault)} ended {dead.who()} at {{at}}, while it held the job")
            .event(claimer.claim, f"{claimer.who()} claimed it at {{at}}")
            .then(f"the queue ran again a job whose owner died, though on_owner_loss = {on_owner_loss}"))


def late_recovery(run: RunHistory, fault: FaultHistory | None, cause: Cause | None, owner: str,
                  claimer: Execution | None, free_s: float, bound: float) -> Proof:
    steps = _steps(run)
    if cause is not None:
        _cause(steps, cause)
    elif fault is not None:
        healed = fault.healed if fault_kind(fault.kind).recovery_from == "healed" else None
        if healed is not None:
            steps.event(healed, f"{_fault_name(fault)}, which took its owner {owner}, was healed at {{at}}")
        else:
            steps.event(_fault_event(fault), f"{_fault_name(fault)} took its owner {owner} at {{at}}")
    if claimer is not None:
        steps.event(claimer.claim, f"{claimer.who()} claimed it at {{at}}")
        steps.derived(claimer.claim.mono, f"a worker was free for {free_s:.3f} s of that wait (bound {bound} s)")
    return steps.then("the job waited for a new owner past the recovery bound")


def unreclaimed(run: RunHistory, ret: Return, fault: FaultHistory, cause: Cause | None, key: str, lease: float,
                free_s: float, bound: float) -> Proof:
    steps = _steps(run)
    if cause is not None:
        _cause(steps, cause)
    else:
        steps.event(_fault_event(fault), f"{_fault_name(fault)} kept {ret.owner.who()} from renewing at {{at}}")
    steps.derived(ret.lease_from + lease, f"its lease ran out at {{at}} ({key} = {lease} s)")
    came = "its accepted ack" if ret.back.kind == events.PROBE_ACK else "an accepted lease extension"
    steps.event(ret.back, f"{ret.owner.who()} came back at {{at}} ({came}), nobody having claimed it, a worker "
                          f"free for {free_s:.3f} s of that wait (bound {bound} s)")
    return steps.then("the queue owed a reclaim past the recovery bound and made none")


def claim_after_completion(run: RunHistory, completion: Event, claim: Event) -> Proof:
    steps = _steps(run)
    if completion.kind == events.QUEUE_COMPLETE:
        order = completion.data.get("order")
        steps.event(completion, f"the queue's record shows it completed by {_label(run, completion)} (order "
                                f"{order}), journaled at {{at}}")
        steps.event(claim, f"the queue's record shows a claim of it by {_label(run, claim)} after that (order "
                           f"{claim.data.get('order')}), journaled at {{at}}")
    else:
        steps.event(completion, f"the queue accepted {_label(run, completion)}'s ack of {completion.job} at {{at}}")
        steps.event(claim, f"{_label(run, claim)} claimed it at {{at}}, after that")
    return steps.then("the queue ran a job it had completed again")


def stale_completion(origin: float, owner: Event | None, stale: Event | None, completion: Event,
                     names: dict[int, str]) -> Proof:
    """From the queue's own record (`chaos.check.queue_record`): the record that took the job from the
    completer (a claim by another, or a release), the completer's earlier claim, the completion.
    `names`: each record's execution (by its seq), by label where the probes reported its claim."""
    steps = _Steps(origin)
    if stale is not None:
        steps.event(stale, f"the queue's record shows {names[stale.seq]} claimed {completion.job} (order "
                           f"{stale.data.get('order')}), journaled at {{at}}")
    if owner is not None:
        took = (f"{names[owner.seq]} claimed it" if owner.kind == events.QUEUE_CLAIM else "the queue took it back")
        steps.event(owner, f"the queue's record shows {took} after that (order {owner.data.get('order')}), "
                           "journaled at {at}")
    steps.event(completion, f"the queue's record shows it accepted a completion by {names[completion.seq]} (order "
                            f"{completion.data.get('order')}), journaled at {{at}}")
    return steps.then("the queue accepted a completion from a claim it no longer held")
