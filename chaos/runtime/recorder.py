"""Journals a target observer's reading of the queue's own record into the ledger while the run goes on,
and once more before the final snapshot, so the checker sees the queue's claims and completions beside the
workers' probes."""

from __future__ import annotations

import threading

from chaos import events
from chaos.ledger import Ledger
from chaos.queue_model import Observer, QueueRecord

POLL_S = 0.1
JOIN_S = 15.0  # longer than a bundled observer's longest read (its 10 s barrier)
KINDS = {"claim": events.QUEUE_CLAIM, "complete": events.QUEUE_COMPLETE, "release": events.QUEUE_RELEASE,
         "fail": events.QUEUE_FAIL}


class Recorder:
    def __init__(self, observer: Observer, ledger: Ledger) -> None:
        self.observer = observer
        self.ledger = ledger
        self.errors: list[str] = []
        self.broken: Exception | None = None  # a record the suite cannot journal: the run is an error
        self._lock = threading.Lock()  # one reader at a time: records are journaled once, in order
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chaos-recorder", daemon=True)

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._done.wait(POLL_S) and self.broken is None:
            try:
                self.flush()
            except ValueError as exc:  # a malformed record: the read consumed it, so the record has a hole
                self.broken = exc
            except Exception as exc:  # noqa: BLE001 - the backend may be restarting; the next read catches up
                self.errors.append(repr(exc))

    def flush(self) -> None:
        """Journal every record made since the last read; each batch is checked whole before any of it is
        journaled. A record found malformed before (by the reading thread) is raised here."""
        with self._lock:
            if self.broken is not None:
                raise self.broken
            for event in [_event(record) for record in self.observer.read()]:
                self.ledger.append(event)

    def stop(self) -> None:
        """End the reading thread; a read stuck on an unreachable server is left to die with the process
        (a daemon), so a stuck observer never holds up the run's teardown past JOIN_S."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_S)


def _event(record: QueueRecord) -> events.Record:
    kind = KINDS.get(record.kind)
    if kind is None:
        raise ValueError(f"an observer reported a record of kind {record.kind!r}; expected one of {', '.join(KINDS)}")
    return events.queue_record(kind, record.job, record.actor,
                               {"at": record.at, "order": record.order, "token": record.token})
