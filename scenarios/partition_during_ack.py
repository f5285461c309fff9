"""Partition the owner while its ack is in flight: hold it right after its effect, black-hole its link to
the backend, let it send its ack into the black hole, and keep the partition until another worker has
claimed the job (at most the recovery bound and a margin); then heal.

Risk probed: "an ack whose reply never comes has an unknown outcome": the worker cannot tell whether
the queue recorded the completion, so it must neither count the job done nor failed; the queue's own
recovery decides (a lease expires and another worker redoes the job: at-least-once). The checker treats
an ack the worker reports with an unknown outcome (`ok` null) as indeterminate: never a stale ack,
never a completion. A lock held by the owner's session stays held until the partition heals.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("partition",)


def run(ctx: Context) -> None:
    (victim,) = ctx.enqueue(1)
    gate = ctx.arm("after:effect", job=victim)
    ctx.start_workers(2)
    held = ctx.wait(gate)
    ctx.partition_until(held.worker, ctx.probe_of("claim", victim, not_worker=held.worker), ctx.recovery_deadline(),
                        mode="blackhole", gate=gate, premise=ctx.leased)
    ctx.wait_for(ctx.execution_ended(victim, held.token), ctx.recovery_deadline(), "the partitioned owner's ack")
    ctx.wait_drained(ctx.recovery_deadline())
