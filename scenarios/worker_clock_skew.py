"""A worker whose wall clock runs ten minutes ahead (libfaketime), started while a healthy worker is
in the middle of a long job it is heartbeating.

Risk probed: "lease arithmetic happens on one clock: the storage's". A worker that compares leases
against its own clock sees every live lease as expired and takes jobs from healthy owners; lease
arithmetic on the database clock is immune to the skew. The long job needs a lease renewed while its owner
works (REQUIRES "renewed_lease"): a lease never renewed would lose it on age alone, so such a contract
skips it.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("clock",)
REQUIRES = ("renewed_lease",)
SKEW_S = 600.0
SHORT_JOBS = 3


def run(ctx: Context) -> None:
    handler_s = ctx.long_handler_s()
    (long_job,) = ctx.enqueue(1, handler_s=handler_s)
    owner = ctx.start_worker()
    ctx.wait_for(ctx.probe_of("claim", long_job, worker=owner), 10.0, "the healthy worker's claim")
    if ctx.contract.heartbeat_s:
        ctx.wait_for(lambda e: e.kind == "probe.heartbeat" and e.job == long_job and e.data.get("ok") is True, 10.0,
                     "the healthy worker's first lease extension")
    ctx.start_worker(clock_offset_s=SKEW_S)
    ctx.enqueue(SHORT_JOBS)
    ctx.wait_drained(2 * handler_s + ctx.recovery_deadline())
