"""Kill two workers whose wall clocks are skewed, one ahead and one behind, each while it holds a job.

Risk probed: "lease arithmetic happens on one clock: the storage's". A lease a worker computes on its
own clock is wrong by the skew: from a clock ahead it ends far in the future, so the dead owner's job
stays unavailable past the recovery bound (stuck); from a clock behind it has ended before it began,
so the job is taken the moment its owner dies (or sooner: an early reclaim). Leases computed on the
database's clock are immune, and so is ownership that is a lock.

The ahead owner is held at its claim. Under a lease, the behind owner, released from its own, works a
long job, extending its lease all the while, so a fresh worker that takes the job from it is early
however slowly that worker starts: the lease it took was renewed a heartbeat ago, not once at a claim
the fresh worker may start too late for. Without a lease it is held too (a long job would meet an
age-based rescuer instead). A fresh worker has claimed a warm-up job, so fresh workers are polling,
before the owners die. A lease never renewed (lease_s without heartbeat_s) cannot be extended, so such a
contract skips it (REQUIRES "renewed_lease").
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("clock", "kill")
REQUIRES = ("renewed_lease",)
AHEAD_S = 600.0
BEHIND_S = -3.0  # past any lease of the bundled targets; the behind worker sees new jobs only 3 s late
WORKING_S = 6.0  # under a lease, the behind owner's job: longer than fresh workers take to start under load


def run(ctx: Context) -> None:
    extending = bool(ctx.contract.lease_s)
    handler_s = WORKING_S if extending else 0.0
    ahead = ctx.start_worker(clock_offset_s=AHEAD_S)
    behind = ctx.start_worker(clock_offset_s=BEHIND_S)
    held, working = ctx.arm("after:claim", worker=ahead), ctx.arm("after:claim", worker=behind)
    ctx.enqueue(2, handler_s=handler_s)  # each skewed worker is held at its first claim, so each takes one of them
    ctx.wait(held)
    ctx.wait(working)
    if extending:
        ctx.release(working)  # the behind owner goes on to work its job, heartbeats and all
    ctx.start_worker()
    ctx.start_worker()
    (warm_up,) = ctx.enqueue(1)
    ctx.wait_for(ctx.probe_of("claim", warm_up, not_worker=behind), 10.0, "a fresh worker's claim of the warm-up job")
    ctx.kill_held(held)
    if extending:
        ctx.kill(behind)
    else:
        ctx.kill_held(working)
    ctx.wait_drained(2 * handler_s + ctx.recovery_deadline())  # both reruns may queue behind one worker
