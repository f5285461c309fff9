"""Kill two workers whose wall clocks are skewed, one ahead and one behind, each while it holds a job.

Risk probed: "lease arithmetic happens on one clock: the storage's". A lease a worker computes on its
own clock is wrong by the skew: from a clock ahead it ends far in the future, so the dead owner's job
stays unavailable past the recovery bound (stuck); from a clock behind it has ended before it began,
so the job is taken the moment its owner dies (or sooner: an early reclaim). Leases computed on the
database's clock are immune, and so is ownership that is a lock. Fresh workers are polling (one has
claimed a warm-up job) before the owners die, so an early reclaim shows however slowly processes start.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("clock", "kill")
AHEAD_S = 600.0
BEHIND_S = -3.0  # past any lease of the bundled targets; the behind worker sees new jobs only 3 s late


def run(ctx: Context) -> None:
    ahead = ctx.start_worker(clock_offset_s=AHEAD_S)
    behind = ctx.start_worker(clock_offset_s=BEHIND_S)
    gates = [ctx.arm("after:claim", worker=ahead), ctx.arm("after:claim", worker=behind)]
    ctx.enqueue(2)  # each skewed worker is held at its first claim, so each takes one of them
    for gate in gates:
        ctx.wait(gate)
    ctx.start_worker()
    ctx.start_worker()
    (warm_up,) = ctx.enqueue(1)
    ctx.wait_for(ctx.probe_of("claim", warm_up), 10.0, "a fresh worker's claim of the warm-up job")
    for gate in gates:
        ctx.kill_held(gate)
    ctx.wait_drained(ctx.recovery_deadline())
