"""Partition the owner from its backend right after its claim, until another worker has claimed the job
(at most the recovery bound and a margin); then heal, and let the owner finish.

Risk probed, the seeds' hardest failure: "a worker that is alive but cannot reach its queue: the lease
expires, another worker takes the job, and the first one finishes later". Its ack must be rejected, and
how long it kept working after losing its claim shows as exposure (an effect after the lease was lost,
work after its own extension failed). With mode=disable (the default) its connections close at once;
with mode=blackhole they stay open and swallow every byte, so a server cannot notice that the owner is
gone until the partition heals: ownership held by a session (a row or advisory lock) stays with the
partitioned owner past the recovery bound. The long job needs a lease renewed while its owner works
(REQUIRES "renewed_lease"): a lease never renewed would lose it on age alone, whatever the partition did,
so such a contract skips it.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("partition",)
REQUIRES = ("renewed_lease",)
PARAMS = {"mode": ("disable", "blackhole")}


def run(ctx: Context) -> None:
    handler_s = ctx.long_handler_s()
    (victim,) = ctx.enqueue(1, handler_s=handler_s)
    gate = ctx.arm("after:claim", job=victim)
    ctx.start_workers(2)
    held = ctx.wait(gate)
    ctx.partition_until(held.worker, ctx.probe_of("claim", victim, not_worker=held.worker), ctx.recovery_deadline(),
                        mode=ctx.param("mode"), gate=gate, premise=ctx.leased)
    ctx.wait_for(ctx.execution_ended(victim, held.token), 2 * handler_s + ctx.recovery_deadline(),
                 "the partitioned owner's ack or abandon")
    ctx.wait_drained(ctx.recovery_deadline())
