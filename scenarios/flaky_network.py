"""Every worker behind a flaky link to its backend: latency with jitter, and its traffic sliced into small
pieces with delays between them, for the whole run.

Risk probed: "networks are slow and lumpy long before they fail": a queue whose claims, extensions and
acks all still arrive, only later and in pieces, must lose nothing, leave nothing stuck, and take no job
from a live owner (the degradation stays well inside any lease).
"""

from __future__ import annotations

from collections.abc import Callable

from chaos import Context, Event

FAULTS = ("latency", "slice")
WORKERS = 3
JOBS = 12
MORE = 3  # jobs enqueued again while a worker has not claimed one yet
ROUNDS = 10


def run(ctx: Context) -> None:
    workers = [ctx.start_worker() for _ in range(WORKERS)]
    for worker in workers:
        ctx.latency(worker, ms=20, jitter_ms=10)
        ctx.slice(worker, average_size=64, size_variation=32, delay_us=200)
    jobs = ctx.enqueue(JOBS)
    # A worker that claimed nothing proved nothing through its degraded link. A broker that pushes to
    # whoever consumes (RabbitMQ) can hand every job to the workers whose slow handshakes ended first, so
    # each worker's first claim is waited for, and while the jobs enqueued so far are all acked without
    # it, a few more are enqueued (a bounded number of times: a worker that never claims leaves its faults
    # unexercised, and the run inconclusive, as it should).
    for worker in workers:
        for _ in range(ROUNDS):
            first_claim_or_last_ack = _claimed_by(worker, jobs[-1])
            seen = ctx.wait_for(first_claim_or_last_ack, ctx.recovery_deadline(margin_s=20.0),
                                f"{worker}'s first claim, or the ack of {jobs[-1]}")
            if seen.kind == "probe.claim":
                break
            jobs = ctx.enqueue(MORE)
    ctx.wait_drained(ctx.recovery_deadline(margin_s=20.0))


def _claimed_by(worker: str, last_job: str) -> Callable[[Event], bool]:
    return lambda e: ((e.kind == "probe.claim" and e.worker == worker)
                      or (e.kind == "probe.ack" and e.job == last_job and e.data.get("ok") is True))
