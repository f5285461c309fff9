"""Every worker behind a flaky link to its backend: latency with jitter, and its traffic sliced into small
pieces with delays between them, for the whole run.

Risk probed: "networks are slow and lumpy long before they fail": a queue whose claims, extensions and
acks all still arrive, only later and in pieces, must lose nothing, leave nothing stuck, and take no job
from a live owner (the degradation stays well inside any lease).
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("latency", "slice")
WORKERS = 3
JOBS = 12


def run(ctx: Context) -> None:
    workers = [ctx.start_worker() for _ in range(WORKERS)]
    for worker in workers:
        ctx.latency(worker, ms=20, jitter_ms=10)
        ctx.slice(worker, average_size=64, size_variation=32, delay_us=200)
    ctx.enqueue(JOBS)
    ctx.wait_drained(ctx.recovery_deadline(margin_s=20.0))
