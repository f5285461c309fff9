"""Restart the backend during recovery: kill the owner after its effect, then restart the backend's
server (immediate: a crash, same data and ports) at the moment another worker reclaims the job, with a
fresh backlog enqueued just before (seeds' checklist, item 4).

Risk probed: recovery that is itself not crash-safe: a reclaim whose state change is lost in the
restart, a completion that is never retried, a job dropped between two owners, and a queue whose server
forgets what it was given (Redis without an append-only file, beanstalkd without its binlog). Every job
must survive (nothing lost); a target that cannot recover at all shows up as stuck.
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
    ctx.start_workers(2)
    ctx.kill_held(effect_gate)
    ctx.start_worker()
    ctx.wait(reclaim_gate, ctx.recovery_deadline())
    ctx.enqueue(JOBS)  # the backlog the restart must keep
    ctx.restart_backend("immediate", gate=reclaim_gate)
    ctx.release(reclaim_gate)
    ctx.wait_drained(2 * ctx.recovery_deadline())
