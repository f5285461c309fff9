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

import bisect
import math

from chaos.check.history import RunHistory
from chaos.faults import fault_kind


def free_seconds(run: RunHistory, start: float, end: float, *, busy_with_jobs: bool = True) -> float:
    """How much of [start, end] some worker process was there and free to take a job. A worker is never
    free while a gate holds it or a fault that takes its jobs (a stop, a pause, a partition) does; with
    `busy_with_jobs`, nor while it holds an execution of its own. The run's free intervals are swept once
    per run (the checker asks this of every waiting job), then each question is two bisections."""
    key = "busy" if busy_with_jobs else "held"
    if key not in run.free_time:
        run.free_time[key] = _free_timeline(run, busy_with_jobs)
    starts, ends, before = run.free_time[key]
    first = bisect.bisect_right(ends, start)  # the first interval ending after `start`
    last = bisect.bisect_left(starts, end) - 1  # the last one beginning before `end`
    if last < first:
        return 0.0

    def overlap(k: int) -> float:
        return max(0.0, min(ends[k], end) - max(starts[k], start))

    inside = before[last] - before[first + 1] if last > first + 1 else 0.0  # whole, finite intervals between
    return overlap(first) + (overlap(last) if last > first else 0.0) + inside


def _free_timeline(run: RunHistory, busy_with_jobs: bool) -> tuple[list[float], list[float], list[float]]:
    """The disjoint intervals in which some worker was there and free, with running totals: one sweep over
    every worker's spans (there, and unavailable), in time order."""
    unavailable: dict[str, list[tuple[float, float]]] = {}
    workers: set[str] = set()
    for history in run.jobs.values():
        for execution in history.executions:
            workers.add(execution.worker)
            if busy_with_jobs:
                finish = execution.end.mono if execution.end is not None else math.inf
                unavailable.setdefault(execution.worker, []).append((execution.at, finish))
    for fault in run.faults.values():  # frozen or cut off: it can take nothing while the fault lasts
        rule = fault_kind(fault.kind)
        if rule.takes_owner and rule.heal is not None and fault.target and fault.applied is not None:
            healed = fault.healed.mono if fault.healed is not None else math.inf
            unavailable.setdefault(fault.target, []).append((fault.applied.mono, healed))
    holds = [*run.gate_holds, *((worker, since, math.inf) for worker, since in run.gate_holders.values())]
    for worker, held_from, held_until in holds:
        unavailable.setdefault(worker, []).append((held_from, held_until))
    changes: list[tuple[float, str, int, int]] = []  # (when, worker, change in there, change in unavailable)
    for worker in {*run.starts, *workers}:
        for left, right in _intervals(run, worker):
            changes += [(left, worker, 1, 0), (right, worker, -1, 0)]
    for worker, spans in unavailable.items():
        for left, right in spans:
            changes += [(left, worker, 0, 1), (right, worker, 0, -1)]
    changes.sort(key=lambda change: change[0])
    there: dict[str, int] = {}
    away: dict[str, int] = {}
    free_workers = 0
    starts: list[float] = []
    ends: list[float] = []
    index = 0
    while index < len(changes):
        when = changes[index][0]
        while index < len(changes) and changes[index][0] == when:  # every change at one instant, then the state
            _, worker, d_there, d_away = changes[index]
            was = there.get(worker, 0) > 0 and away.get(worker, 0) == 0
            there[worker] = there.get(worker, 0) + d_there
            away[worker] = away.get(worker, 0) + d_away
            free_workers += (there[worker] > 0 and away[worker] == 0) - was
            index += 1
        if free_workers and len(starts) == len(ends):
            starts.append(when)
        elif not free_workers and len(starts) > len(ends):
            ends.append(when)
    if len(starts) > len(ends):
        ends.append(math.inf)
    before, total = [], 0.0  # before[k]: the length of the intervals before k (the first and last may be endless)
    for left, right in zip(starts, ends, strict=True):
        before.append(total)
        total += right - left if math.isfinite(right - left) else 0.0
    return starts, ends, before


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

