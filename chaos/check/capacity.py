"""Whether a worker was free to recover a job: a recovery bound promises how soon a job whose owner was
lost is *available* again, and a queue cannot be blamed for a job nobody was free to take (every worker
alive was busy with a job of its own, or the suite had killed them all). The recovery rule counts only the
time some worker was free; a worker that crashed on its own is the queue's failure, and counts as free.

A worker can take nothing while a gate holds it, or a fault that takes its jobs does (a stop, a pause, a
partition: applied until healed). For a recovery it is also busy from a claim until that execution ends
(an ack, an abandon, its process's end, a kill), whether or not another worker has taken the job
meanwhile; a worker that may run several jobs at once gets the benefit of that doubt only while every
worker holds one. A job still waiting at the end does not count busyness: a worker whose execution the
ledger never saw end (a library's pool child that went quiet) is not proven busy.
"""

from __future__ import annotations

import itertools
import math

from chaos.check.history import RunHistory


def free_seconds(run: RunHistory, start: float, end: float, *, busy_with_jobs: bool = True) -> float:
    """How much of [start, end] some worker process was there and free to take a job. A worker is never
    free while a gate holds it or a fault that takes its jobs (a stop, a pause, a partition) does; with
    `busy_with_jobs`, nor while it holds an execution of its own."""
    unavailable: dict[str, list[tuple[float, float]]] = {}
    workers: set[str] = set()
    for history in run.jobs.values():
        for execution in history.executions:
            workers.add(execution.worker)
            if busy_with_jobs:
                finish = execution.end.mono if execution.end is not None else math.inf
                unavailable.setdefault(execution.worker, []).append((execution.at, finish))
    for fault in run.faults.values():  # frozen or cut off: it can take nothing while the fault lasts
        rule = fault.rule
        if rule.takes_owner and rule.heal is not None and fault.target and fault.applied is not None:
            healed = fault.healed.mono if fault.healed is not None else math.inf
            unavailable.setdefault(fault.target, []).append((fault.applied.mono, healed))
    holds = [*run.gate_holds, *((worker, since, math.inf) for worker, since in run.gate_holders.values())]
    for worker, held_from, held_until in holds:
        unavailable.setdefault(worker, []).append((held_from, held_until))
    alive = {worker: _intervals(run, worker) for worker in {*run.starts, *workers}}
    cuts = sorted({start, end, *(t for spans in (*alive.values(), *unavailable.values()) for span in spans
                                 for t in span if start < t < end)})
    free = 0.0
    for left, right in itertools.pairwise(cuts):
        middle = (left + right) / 2
        if any(_within(spans, middle) and not _within(unavailable.get(worker, []), middle)
               for worker, spans in alive.items()):
            free += right - left
    return free


def _intervals(run: RunHistory, worker: str) -> list[tuple[float, float]]:
    """The spans a worker's processes (role worker) were there to take work: each start until the next exit
    the suite caused (always, for a worker whose start the ledger does not show). A worker that exited on
    its own (a crash when its connection broke) is the queue's own failure to keep working, so it still
    counts as there."""
    if worker not in run.starts:
        return [(-math.inf, math.inf)]
    exits = sorted(e.mono for e in run.exits.get(worker, []) if e.data.get("expected", True))
    spans = []
    for started in sorted(e.mono for e in run.starts[worker] if e.data.get("role", "worker") == "worker"):
        ended = next((t for t in exits if t >= started), math.inf)
        spans.append((started, ended))
    return spans


def _within(spans: list[tuple[float, float]], t: float) -> bool:
    return any(left <= t < right for left, right in spans)
