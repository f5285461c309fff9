"""A poison job whose handler fails every time, among healthy jobs.

Risk probed: a retry policy without a bound retries forever (the job is never settled), or one that
dead-letters early or late. Under a contract with max_attempts the poison job must be dead-lettered
after exactly that many attempts, and every healthy job must complete.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ()
HEALTHY_JOBS = 5


def run(ctx: Context) -> None:
    ctx.enqueue(1, fail=True)
    ctx.enqueue(HEALTHY_JOBS)
    ctx.start_workers(2)
    ctx.wait_drained(ctx.recovery_deadline(margin_s=8.0))
