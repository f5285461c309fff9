"""Plays a schedule through a scenario's `Context`: the one interpreter of the schedule language, used by
every example `chaos explore` runs and by every scenario file it writes, so a replay is the same code."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from chaos import events
from chaos.errors import NotExercised
from chaos.events import Event
from chaos.explore.schedule import HOLDING, KILLING, Schedule, Step
from chaos.scenario import Context, Gate, HeldProbe

POLL_S = 0.05  # how long each pending step's gate is looked at in turn


def play(ctx: Context, raw: dict[str, Any]) -> None:
    schedule = Schedule.from_dict(raw)
    handler_s = ctx.long_handler_s()
    jobs: list[str] = []
    for number in range(schedule.jobs):
        jobs += ctx.enqueue(1, handler_s=handler_s if number < schedule.long_jobs else 0.0)
    # Every gate is armed before the first worker starts, so that a 1st claim cannot slip past its gate.
    gates = [ctx.arm(step.trigger, job=jobs[step.job - 1], nth=step.nth) for step in schedule.steps]
    for _ in range(schedule.workers):
        ctx.start_worker()
    bound = (2 * handler_s if schedule.long_jobs else 0.0) + ctx.recovery_deadline()
    stale = [held for held, step, gate in _in_match_order(ctx, list(zip(schedule.steps, gates)), bound)
             if _apply(ctx, step, gate, held)]
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
            if time.monotonic() >= until:
                raise NotExercised("no probe matched the trigger of " + "; ".join(
                    step.describe() for step, _ in pending) + f" within {bound:.1f}s")


def _apply(ctx: Context, step: Step, gate: Gate, held: HeldProbe) -> bool:
    """Apply the step's fault to what its gate holds; whether its victim lives on holding a stale claim."""
    if step.fault in HOLDING:
        until = (ctx.probe_of("claim", held.job, not_worker=held.worker) if step.release == "reclaimed"
                 else _never)
        if step.fault == "stop":
            ctx.stop_until(held.worker, until, ctx.recovery_deadline(), gate=gate)
        elif step.fault == "pause":
            ctx.pause_until(held.worker, until, ctx.recovery_deadline(), gate=gate)
        else:
            ctx.partition_until(held.worker, until, ctx.recovery_deadline(), gate=gate)
        return True
    if step.fault in KILLING:
        if step.fault == "kill":
            ctx.kill_held(gate)
        else:
            ctx.kill_container(held.worker, gate=gate)
        if step.replace:
            ctx.start_worker()
    elif step.fault == "restart":
        ctx.restart(held.worker, gate=gate)
    else:
        ctx.restart_backend(gate=gate)
    return False


def _never(event: Event) -> bool:
    return False


def _ended(held: HeldProbe) -> Callable[[Event], bool]:
    """The held execution acked or abandoned its job, or its worker's process exited (a later step's kill)."""
    return lambda e: ((e.kind in (events.PROBE_ACK, events.PROBE_ABANDON) and e.job == held.job
                       and e.data.get("token") == held.token)
                      or (e.kind == events.PROCESS_EXIT and e.worker == held.worker))
