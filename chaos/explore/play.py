"""Plays a schedule through a scenario's `Context`: the one interpreter of the schedule language, used by
every example `chaos explore` runs and by every scenario file it writes, so a replay is the same code."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from chaos import events
from chaos.errors import NotExercised
from chaos.events import Event
from chaos.explore.schedule import Schedule, Step, role, victim
from chaos.scenario import Context, Gate, HeldProbe

POLL_S = 0.05  # how long each pending step's gate is looked at in turn
DRAINED_CHECK_S = 0.5  # how often the queue is asked whether every job is finished, while steps wait


def play(ctx: Context, raw: dict[str, Any]) -> None:
    """Run a schedule (its plain form, as a scenario file carries it): enqueue its jobs, arm a gate per
    step, start its workers, apply each step's fault as its gate holds a probe, then wait for every stale
    owner to finish and for the queue to drain."""
    schedule = Schedule.from_dict(raw)
    handler_s = ctx.long_handler_s()
    jobs: list[str] = []
    for number in range(schedule.jobs):
        jobs += ctx.enqueue(1, handler_s=handler_s if number < schedule.long_jobs else 0.0)
    # Every gate is armed before the first worker starts, so that a 1st claim cannot slip past its gate.
    gates = [ctx.arm(step.trigger, job=jobs[step.job - 1], nth=step.nth) for step in schedule.steps]
    for _ in range(schedule.workers):
        ctx.start_worker()
    # Long enough for one worker to run every long job in turn, and then recover one more.
    bound = handler_s * (schedule.long_jobs + 1 if schedule.long_jobs else 0) + ctx.recovery_deadline()
    faults = _Faults(ctx, schedule.workers)
    stale = [held for held, step, gate in _in_match_order(ctx, list(zip(schedule.steps, gates, strict=True)), bound)
             if faults.apply(step, gate, held)]
    # A held owner that went on after its release must finish its stale execution before the end, so
    # that what it then did (an effect, an ack, an extension) is in the ledger to be judged.
    for held in stale:
        ctx.wait_for(_ended(held), bound, f"the end of {held.worker}'s execution of {held.job} after its release")
    ctx.wait_drained(bound)


def _in_match_order(ctx: Context, pending: list[tuple[Step, Gate]],
                    bound: float) -> Iterator[tuple[HeldProbe, Step, Gate]]:
    """Each step as its gate holds a probe, whatever the steps' order: a step keyed to an event that comes
    later never keeps an earlier event's step waiting (its gate holding a worker meanwhile). A step whose
    event has not come within `bound` of the last one ends the run as not exercised."""
    until = time.monotonic() + bound
    checked = time.monotonic()
    while pending:
        for step, gate in pending:
            try:
                held = ctx.wait(gate, POLL_S)
            except NotExercised:
                continue
            pending.remove((step, gate))
            yield held, step, gate
            until = time.monotonic() + bound
            break
        else:
            drained = False
            if time.monotonic() >= checked + DRAINED_CHECK_S:
                checked = time.monotonic()
                drained = _drained(ctx)
            if drained or time.monotonic() >= until:
                why = "the queue had finished every job" if drained else f"none came within {bound:.1f}s"
                raise NotExercised("the trigger of " + "; ".join(step.describe() for step, _ in pending)
                                   + f" never came: {why}")


class _Faults:
    """Applies each step's fault, counting the workers alive: a kill that leaves none starts a fresh one."""

    def __init__(self, ctx: Context, workers: int) -> None:
        self.ctx, self.alive = ctx, workers

    def apply(self, step: Step, gate: Gate, held: HeldProbe) -> bool:
        """Apply the step's fault to what its gate holds; whether its victim lives on holding a stale claim."""
        ctx = self.ctx
        target = victim(step.fault, held.worker)
        if role(step.fault) == "holds":
            until = ctx.probe_of("claim", held.job, not_worker=held.worker)
            ctx.hold_until(step.fault, target, until, ctx.recovery_deadline(), gate, premise=ctx.leased)
            return True
        ctx.inject(step.fault, target, gate)
        if role(step.fault) == "kills":
            if step.replace or self.alive == 1:
                ctx.start_worker()
            else:
                self.alive -= 1
        ctx.release(gate)  # what the gate held goes on (a restarted server's client) or is gone
        return False


def _drained(ctx: Context) -> bool:
    """Every job done or dead in the queue's own view: no trigger of a job's life can come any more."""
    try:
        states = ctx.snapshot()
    except Exception:  # noqa: BLE001 - a backend restarting: ask again later
        return False
    return len(states) >= len(ctx.jobs) and all(s.state in ("done", "dead") for s in states)


def _ended(held: HeldProbe) -> Callable[[Event], bool]:
    """The held execution acked or abandoned its job, or its worker's process exited (a later step's kill)."""
    return lambda e: ((e.kind in (events.PROBE_ACK, events.PROBE_ABANDON) and e.job == held.job
                       and e.data.get("token") == held.token)
                      or (e.kind == events.PROCESS_EXIT and e.worker == held.worker))
