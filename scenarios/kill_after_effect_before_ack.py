"""Kill a worker after the external effect but before the acknowledgement (seeds' checklist, item 1).

Risk probed: "a worker can send an email or charge a card and crash before acknowledging the job".
A gate holds the owner right after its effect is recorded; its whole process tree is SIGKILLed while
held, a replacement worker starts, and the queue must hand the job to someone else within the
contract's recovery bound. Under at-least-once that is a redelivery; a committed marker with no
recovery rule leaves the job stuck.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill",)
JOBS = 8


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    gate = ctx.arm("after:effect", job=victim)
    ctx.start_workers(2)
    ctx.kill_held(gate)
    ctx.start_worker()
    ctx.wait_drained(ctx.recovery_deadline())
