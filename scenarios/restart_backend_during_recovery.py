"""Restart the backend during recovery: kill the owner after its effect, then restart the PostgreSQL
server (immediate shutdown, same data and port) at the moment another worker reclaims the job
(seeds' checklist, item 4).

Risk probed: recovery that is itself not crash-safe: a reclaim whose state change is lost in the
restart, a completion that is never retried, a job dropped between two owners. Every job must survive
(nothing lost); a target that cannot recover at all shows up as stuck.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill", "backend_restart")
JOBS = 6


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    effect_gate = ctx.arm("after:effect", job=victim)
    reclaim_gate = ctx.arm("after:claim", job=victim, nth=2)
    ctx.start_worker()
    ctx.start_worker()
    ctx.kill_held(effect_gate)
    ctx.start_worker()
    ctx.wait(reclaim_gate, ctx.recovery_deadline())
    ctx.restart_backend("immediate", gate=reclaim_gate)
    ctx.release(reclaim_gate)
    ctx.wait_drained(2 * ctx.recovery_deadline())
