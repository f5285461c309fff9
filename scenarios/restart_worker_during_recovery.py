"""Restart during recovery, on the worker side: kill the owner after its effect, restart the target's
reconciler (if it has one) while the job waits to be recovered, then restart the worker that reclaims
the job at the moment of its reclaim (seeds' checklist, item 4).

Risk probed: recovery that works once but not twice: a rescuer whose restart forgets pending work,
a second orphaning of the same job that is never noticed. The job must be recovered again, each time
within the recovery bound, and nothing may be lost.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill", "restart")
JOBS = 6


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    effect_gate = ctx.arm("after:effect", job=victim)
    reclaim_gate = ctx.arm("after:claim", job=victim, nth=2)
    ctx.start_workers(2)
    ctx.kill_held(effect_gate)
    if ctx.has_reconciler:
        ctx.restart("reconciler")
    ctx.start_worker()
    reclaimer = ctx.wait(reclaim_gate, ctx.recovery_deadline()).worker
    ctx.restart(reclaimer, gate=reclaim_gate)
    ctx.release(reclaim_gate)
    ctx.wait_drained(2 * ctx.recovery_deadline())
