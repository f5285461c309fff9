"""Stop an owner past its lease, then kill the next owner right after its claim.

Risk probed: "an extension must check that the worker still owns the claim (RowsAffected() == 1 on the
claim token)". A stale owner that resumes and extends by job id alone keeps the job's lease alive for
the next owner, who is dead: the job stays unavailable past the recovery bound, and the stale owner goes
on as if it owned it. The checker sees the stale extension itself (a successful extension reported after
another worker's claim). It needs a lease renewed while its owner works (REQUIRES "renewed_lease"): a lease
never renewed would lose the long job on age alone, so such a contract skips it. Without a lease nobody may
take a stopped owner's job, so there is no next owner to kill: the stopped owner finishes its job after
SIGCONT.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("stop", "kill")
REQUIRES = ("renewed_lease",)


def run(ctx: Context) -> None:
    handler_s = ctx.long_handler_s()
    (victim,) = ctx.enqueue(1, handler_s=handler_s)
    first = ctx.arm("after:claim", job=victim)
    leased = ctx.contract.lease_s is not None
    second = ctx.arm("after:claim", job=victim, nth=2) if leased else None  # nth counts the first claim too
    ctx.start_workers(2)
    held = ctx.wait(first)
    ctx.stop_until(held.worker, ctx.probe_of("claim", victim, not_worker=held.worker), ctx.recovery_deadline(),
                   gate=first, premise=ctx.leased)
    if second is not None:
        ctx.kill_held(second)
        ctx.start_worker()
    else:
        ctx.waive("kill", "without a lease nobody may take the stopped owner's job: there is no next owner to kill")
    ctx.wait_for(ctx.execution_ended(victim, held.token), 2 * handler_s + ctx.recovery_deadline(),
                 "the stale owner's ack or abandon")
    ctx.wait_drained(ctx.recovery_deadline())
