"""Steady baseline with no faults: a correct target completes every job exactly once.

Risk probed: a recovery rule that fires on its own (a lease shorter than normal work, an age-based
rescuer) turns a healthy run into duplicates. With no fault injected, any redelivery shows up as a
premature reclaim (of a job still running) or a claim after completion (of one the queue had completed),
and any job not done is lost or stuck.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ()
JOBS = 12


def run(ctx: Context) -> None:
    ctx.enqueue(JOBS)
    ctx.start_workers(2)
    ctx.wait_drained(ctx.recovery_deadline(margin_s=10.0))
