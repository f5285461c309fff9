"""`-s warmup=true`: start the workers, wait until each has polled the queue once and is idle (its `ready`
probe), then enqueue. Without it every bundled scenario's victim is the first job a fresh worker takes,
so a library's start-up race (its first sweep beside its first pop) can decide the run instead of the
fault under test.

The context holds the jobs a scenario enqueues before its first workers are warm, and enqueues them
once every worker started so far has said `ready`; the warm-up ends there, and later starts (a
replacement after a kill) do not wait. A worker that never says `ready` makes the run inconclusive: the
suite cannot tell a target whose workers do not send the probe from one that never finished starting,
and either way the premise (warm workers) did not hold, which is not a verdict on the queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from chaos import events
from chaos.errors import NotExercised
from chaos.events import Event
from chaos.queue_model import Job

READY_TIMEOUT_S = 30.0  # a worker's start (interpreter, library, connection) to its first empty poll
CHECK_S = 0.1  # how often the wait looks at the ledger and the workers' liveness


def unready(ledger: Iterable[Event], workers: Iterable[str]) -> list[str]:
    """The workers (of those named) with no `ready` probe since their latest start: a restarted worker
    must say it again, and a probe before its start (another incarnation's) does not count."""
    ready: dict[str, bool] = {}
    for event in ledger:
        if event.kind == events.PROCESS_START and event.worker is not None:
            ready[event.worker] = False
        elif event.kind == events.PROBE_READY and event.worker is not None and event.worker in ready:
            ready[event.worker] = True
    return [worker for worker in workers if not ready.get(worker, False)]


class Warmup:
    """The warm-up of one run: off (jobs go straight to the queue) or holding jobs until the workers are
    ready. `enqueue` puts jobs in the queue and journals them; `alive` says whether a worker still runs."""

    def __init__(self, on: bool, ledger: Callable[[], list[Event]], enqueue: Callable[[list[Job]], None],
                 alive: Callable[[str], bool], timeout_s: float = READY_TIMEOUT_S) -> None:
        self.pending = on  # the warm-up has not ended yet
        self._ledger, self._enqueue, self._alive, self._timeout_s = ledger, enqueue, alive, timeout_s
        self._held: list[Job] = []
        self._workers: list[str] = []

    def enqueue(self, jobs: list[Job]) -> None:
        """Enqueue now, or hold the jobs until the workers are warm (before any worker started)."""
        if not self.pending:
            self._enqueue(jobs)
            return
        self._held += jobs
        if self._workers:  # the workers were started first: warm them, then enqueue
            self._finish()

    def started(self, workers: list[str]) -> None:
        """Workers the scenario just started: while jobs are held, wait until all are ready and enqueue them."""
        if not self.pending:
            return
        self._workers += workers
        if self._held:
            self._finish()

    def _finish(self) -> None:
        self._wait_ready()
        held, self._held, self.pending = self._held, [], False
        self._enqueue(held)

    def _wait_ready(self) -> None:
        until = time.monotonic() + self._timeout_s
        while waiting := unready(self._ledger(), self._workers):
            gone = [worker for worker in waiting if not self._alive(worker)]
            if gone:
                raise NotExercised(f"-s warmup=true: {_workers(gone)} exited before saying it was ready (the "
                                   "`ready` probe), so no job was enqueued: see its log")
            if time.monotonic() >= until:
                raise NotExercised(
                    f"-s warmup=true: {_workers(waiting)} sent no `ready` probe in the {self._timeout_s:.0f}s waited "
                    "for it, so no job was enqueued and the run tested nothing. Either the target's worker "
                    "does not send `ready` after its first empty poll (chaos.probe.ready(), "
                    "docs/probe-protocol.md#the-ready-point), or it never finished starting (see its log). "
                    "Run without -s warmup to test this target cold")
            time.sleep(CHECK_S)


def _workers(names: list[str]) -> str:
    return ("worker " if len(names) == 1 else "workers ") + ", ".join(names)
