"""Many workers contending for many short jobs, with no faults.

Risk probed: "a claim must hand each job to exactly one worker" (FOR UPDATE SKIP LOCKED, or a
conditional update that checks the status it read). Eight workers polling at once turn a claim that
reads and then updates without a lock into two owners of one job: a reclaim from a healthy owner, and
two effects. A correct claim completes every job exactly once.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ()
WORKERS = 8
JOBS = 60


def run(ctx: Context) -> None:
    ctx.enqueue(JOBS)
    ctx.start_workers(WORKERS)
    ctx.wait_drained(ctx.recovery_deadline(margin_s=20.0))
