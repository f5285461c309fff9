"""Kill the owner right after its claim, before its effect (seeds' checklist: a worker crashes mid-handler).

Risk probed: "a worker can die at any point of a job, and the job must not be lost". A gate holds the
owner right after its claim is recorded; its whole process tree is SIGKILLed while held, so the effect
never happens. The queue must hand the job to another worker within the recovery bound, and, with a
lease, not sooner than the dead owner's lease allows (a lease outlives its owner: a queue that reclaims
early does not enforce it). A claim marker with no recovery rule leaves the job stuck.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill",)
JOBS = 8


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    gate = ctx.arm("after:claim", job=victim)
    ctx.start_workers(2)
    ctx.kill_held(gate)
    ctx.start_worker()
    ctx.wait_drained(ctx.recovery_deadline())
