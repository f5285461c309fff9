"""A handler that runs longer than the ownership deadline (lease or rescue age), with an idle worker
ready to take any job that looks abandoned.

Risk probed: "set the lease shorter than the handler's running time and the job is claimed again
while the first worker is still working. Both execute." A heartbeat on its own thread keeps the lease;
a heartbeat blocked by its own handler, or an age-based rescuer, hands a live worker's job to another.
This is where a lease never renewed (lease_s without heartbeat_s: rescue by age alone) is judged: the
scenarios that need a renewed lease are skipped for it, this one runs.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ()
SHORT_JOBS = 3


def run(ctx: Context) -> None:
    handler_s = ctx.long_handler_s()
    (long_job,) = ctx.enqueue(1, handler_s=handler_s)
    owner = ctx.start_worker()
    ctx.wait_for(ctx.probe_of("claim", long_job, worker=owner), 10.0, "the first worker's claim of the long job")
    ctx.start_worker()  # idle, polling: it takes the job the moment the queue offers it
    ctx.enqueue(SHORT_JOBS)
    ctx.wait_drained(2 * handler_s + ctx.recovery_deadline())
