"""A stale owner completes while the new owner still holds the job.

Stop the owner right after its claim until another worker has claimed the job, hold that new owner right
after its claim, resume the stale owner and let it finish (effect and ack, or abandon), then release the
new owner.

Risk probed: "a stale worker must not complete a job it lost", in the ordering that separates fenced
from unfenced completions: the job is still claimed (by the new owner) when the stale ack arrives, so an
ack that checks the status but not the claim token wins. (In stop_past_deadline the new owner has
usually finished first, and then a status check alone rejects the stale ack.) It needs ownership with a
deadline (REQUIRES "lease": lease_s or reservation_s): without one nobody may take a stopped owner's job, no
new owner can hold it, and the run is skipped with that reason.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("stop",)
REQUIRES = ("lease",)


def run(ctx: Context) -> None:
    (victim,) = ctx.enqueue(1)
    first = ctx.arm("after:claim", job=victim)
    second = ctx.arm("after:claim", job=victim, nth=2)  # nth counts the first claim too
    ctx.start_workers(2)
    held = ctx.wait(first)
    ctx.stop_until(held.worker, ctx.probe_of("claim", victim, not_worker=held.worker), ctx.recovery_deadline(),
                   gate=first)
    ctx.wait_for(ctx.execution_ended(victim, held.token), ctx.recovery_deadline(), "the stale owner's ack or abandon")
    ctx.wait(second)
    ctx.release(second)
    ctx.wait_drained(ctx.recovery_deadline())
