"""Start-up on purpose: enqueue while the workers start, hold the run's first claim, start one more worker
beside it, then kill the owner.

Risk probed (seeds: "startup alone is not proof that every other private queue is orphaned": Sidekiq
Pro's super_fetch recovers another process's private queue at start-up only after its heartbeat expired
and a guard): a queue whose start-up recovery, first sweep or first pop runs beside a fresh worker's
first claim. A worker that starts while the owner holds its first job must not take that job from it
(a reclaim while the owner is alive and its lease held), and the job the killed owner held must still
be recovered within the recovery bound. The other bundled scenarios start warm with `-s warmup=true`;
this one is cold by design, so it refuses warmup.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("kill",)
PARAMS = {"warmup": ("false",)}  # the premise is a cold start: the jobs are enqueued while the workers start
JOBS = 1  # one job: the late worker idles (and says `ready`) only while the owner holds it


def run(ctx: Context) -> None:
    first = ctx.arm("after:claim")  # the run's first claim, whichever worker makes it
    ctx.start_workers(2)
    (victim,) = ctx.enqueue(JOBS)
    held = ctx.wait(first)
    late = ctx.start_worker()  # starts beside a live first claim: its start-up must leave that job alone
    ctx.wait_for(lambda e: e.kind == "probe.ready" and e.worker == late, ctx.recovery_deadline(),
                 f"{late}'s `ready` probe (its start-up done beside {held.worker}'s first claim of {victim}; a target "
                 "whose workers send none cannot run this scenario: docs/probe-protocol.md#the-ready-point)")
    ctx.kill_held(first)
    ctx.wait_drained(ctx.recovery_deadline())
