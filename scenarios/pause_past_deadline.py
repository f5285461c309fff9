"""Freeze the owner's whole container past its deadline: `docker pause` (the cgroup freezer) right after
its claim until another worker has claimed the job, then unpause it. Needs workers in containers (the
target's image, or --worker-image).

Risk probed: the stop_past_deadline risk, for a worker whose heartbeat a SIGSTOP of its process tree
cannot reach: a helper process the worker daemonised (a heartbeat sidecar) keeps extending the lease of a
worker that is not working, so under SIGSTOP the lease never runs out and nothing is tested. The freezer
stops every process of the container at once, as a hung VM or a long GC pause of the whole process group
would: the lease runs out, another worker takes the job, and the stale owner must not complete it.
For ownership models without a deadline, nobody may take the job: the pause lasts at most the recovery
bound plus a margin.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("pause",)
JOBS = 6


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    gate = ctx.arm("after:claim", job=victim)
    ctx.start_workers(2)
    held = ctx.wait(gate)
    owner = held.worker
    ctx.pause_until(owner, ctx.probe_of("claim", victim, not_worker=owner), ctx.recovery_deadline(), gate=gate,
                    premise=ctx.leased)
    # The thawed owner must finish its stale execution (abandon, or an ack the queue judges) before the end.
    ctx.wait_for(ctx.execution_ended(victim, held.token), ctx.recovery_deadline(), "the stale owner's ack/abandon")
    ctx.wait_drained(ctx.recovery_deadline())
