"""Cut the backend's container off its network during recovery: kill the owner after its effect, and the
moment another worker reclaims the job, disconnect the server's container from its network (every
worker's connections fail at once, new ones are refused, the server runs on with its state) until a
recovery bound has passed, then connect it again. Needs the docker provider.

Risk probed: a network split of the whole queue from its server while a reclaim is under way (what a
broker's host losing its link does): a reclaim or an ack whose reply is lost must be neither lost nor
done twice, leases must still run out on the server's clock while nobody can reach it, and every worker
must reconnect. Every job must still be done once.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill", "disconnect")
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
    ctx.disconnect_backend_until(lambda event: False, ctx.contract.recovery_bound_s, gate=reclaim_gate)
    ctx.wait_drained(2 * ctx.recovery_deadline())
