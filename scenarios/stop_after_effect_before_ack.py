"""Stop the owner right after its effect, before its ack, until another worker has claimed the job; then
resume it so that it acknowledges a job it no longer owns.

Risk probed: "a stale worker must not complete a job it lost", where a watchdog cannot help: the
owner's last check passed before its effect, and the lease is lost between the effect and the ack. Only
the ack itself can refuse it (a conditional ack on the claim token). Without a lease nobody may take a
stopped owner's job: it acknowledges its job after SIGCONT.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("stop",)
JOBS = 4


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    gate = ctx.arm("after:effect", job=victim)
    ctx.start_workers(2)
    held = ctx.wait(gate)
    ctx.stop_until(held.worker, ctx.probe_of("claim", victim, not_worker=held.worker), ctx.recovery_deadline(),
                   gate=gate, premise=ctx.leased)
    ctx.wait_for(ctx.execution_ended(victim, held.token), ctx.recovery_deadline(), "the stale owner's ack")
    ctx.wait_drained(ctx.recovery_deadline())
