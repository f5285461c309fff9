"""The run's history: one SQLite table (WAL) that every part appends to as things happen.

Fault injection and checking meet only here, as in Jepsen: a runner killed halfway still leaves a
readable ledger, and `chaos report` recomputes the verdict from it alone.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from chaos import events
from chaos.errors import ConfigError, HarnessError
from chaos.events import Event, Record

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    mono   REAL NOT NULL,
    wall   REAL NOT NULL,
    source TEXT NOT NULL,
    kind   TEXT NOT NULL,
    job    TEXT,
    worker TEXT,
    data   TEXT NOT NULL
)
"""

_LOAD_CHUNK = 10_000  # rows per fetch and per JSON decode: fast, and memory stays bounded


class Ledger:
    """Appends events durably; safe to call from many threads (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Condition()
        self._events: list[Event] = []
        self._closed = False
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(SCHEMA)
        except sqlite3.Error as exc:
            raise unwritable(path, exc) from exc

    def append(self, record: Record) -> Event:
        """Commit one event (built by a `chaos.events` constructor) and return it, stamped; the commit
        happens before this returns."""
        kind, source, job, worker, payload = record
        encoded = json.dumps(payload, sort_keys=True, default=str)
        with self._lock:
            if self._closed:
                raise LedgerClosed(f"the run's ledger {self.path} was closed: the run has ended")
            mono, wall = time.monotonic(), time.time()
            try:
                cursor = self._db.execute(
                    "INSERT INTO events (mono, wall, source, kind, job, worker, data) VALUES (?,?,?,?,?,?,?)",
                    (mono, wall, source, kind, job, worker, encoded),
                )
            except sqlite3.OperationalError as exc:  # the disk is full, or the file was made read-only
                raise unwritable(self.path, exc) from exc
            assert cursor.lastrowid is not None
            event = Event(cursor.lastrowid, mono, wall, source, kind, job, worker, payload)
            self._events.append(event)
            self._lock.notify_all()
        return event

    def events(self) -> list[Event]:
        """A copy of everything committed so far, for the controller's own observations."""
        with self._lock:
            return list(self._events)

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, after: int = 0) -> Event | None:
        """Block until an event with seq > `after` satisfies `predicate`; None on timeout.

        Scenarios order racing steps with this (and with gates), never with sleeps.
        """
        deadline = time.monotonic() + timeout
        seen = 0
        with self._lock:
            while True:
                for event in self._events[seen:]:
                    if event.seq > after and predicate(event):
                        return event
                seen = len(self._events)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._lock.wait(remaining)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()


class LedgerUnwritable(ConfigError):
    """The machine's problem, not the queue's: the run cannot be recorded, so it cannot be judged. Every
    part that appends meets it; the controller's own append at the run's end reports it."""


class LedgerClosed(HarnessError):
    """An append after the run closed its ledger: a thread the run's end did not wait for (a scenario
    interrupted inside a fault) reaching its own end late."""


def unwritable(path: Path, exc: Exception) -> LedgerUnwritable:
    return LedgerUnwritable(f"Cannot write the run's ledger {path} ({exc}): the filesystem holding it is full or not "
                       "writable, so the run cannot be recorded and was stopped. Free space there, or pick another "
                       "--runs-dir (or CHAOS_RUNS_DIR).")


def read_events(path: Path, kinds: tuple[str, ...] = ()) -> list[Event]:
    """Read a ledger (only the events of these `kinds`, when given) in commit order; works on a ledger
    whose writer was killed.

    Loading a million events is dominated by per-row overhead, so each chunk of rows has its JSON
    decoded in one call, and the garbage collector is paused: a million new objects would otherwise
    trigger repeated full collections that find nothing.
    """
    if not path.is_file():
        raise ConfigError(
            f"No ledger at {path}. Expected a run directory written by `chaos run` containing "
            "ledger.sqlite; pass the run directory itself (runs/<time>-<target>-<scenario>)."
        )
    paused = gc.isenabled()
    gc.disable()
    try:
        try:
            with closing(sqlite3.connect(str(path))) as db:
                return _load(db, kinds)
        except sqlite3.OperationalError as exc:
            # A ledger on a read-only filesystem (a mounted archive, a CI artifact): WAL mode cannot make
            # its shared-memory file there, but nothing writes to it either, so it can be read as it stands,
            # unless its writer was killed before folding its write-ahead log in: an immutable read ignores
            # that log, and would judge the run without the events it holds.
            wal = path.with_name(path.name + "-wal")
            if wal.is_file() and wal.stat().st_size > 0:
                raise ConfigError(f"Cannot read the ledger {path} ({exc}): its write-ahead log {wal.name} still holds "
                                  "events (its writer was killed, or is still running), which can only be read "
                                  "where the directory is writable. Copy the run dir somewhere writable and pass "
                                  "that copy.") from exc
            with closing(sqlite3.connect(path.resolve().as_uri() + "?immutable=1", uri=True)) as db:
                return _load(db, kinds)
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise ConfigError(f"{path} is not a readable queue-chaos ledger ({exc}).") from exc
    finally:
        if paused:
            gc.enable()


def last_event(path: Path) -> Event | None:
    """A ledger's last event (one indexed row, however long the ledger); None if empty or unreadable."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT seq, mono, wall, source, kind, job, worker, data FROM events "
                             "ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            return None
        seq, mono, wall, source, kind, job, worker, data = row
        return Event(seq, mono, wall, source, kind, job, worker, json.loads(data))
    except (sqlite3.Error, ValueError):
        return None


def progress(path: Path) -> tuple[int, int, int, str | None]:
    """A running ledger at a glance, for a suite's progress line: jobs enqueued, jobs some ack the queue
    accepted has settled (by the worker's word or the control's), faults applied, and the last event's
    kind (zeros and None while unreadable)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            enqueued, settled, faults = db.execute(
                "SELECT COUNT(DISTINCT CASE WHEN kind = ? THEN job END), "
                "COUNT(DISTINCT CASE WHEN (kind = ? AND json_extract(data, '$.ok') = 1) "
                "OR (kind = ? AND json_extract(data, '$.outcome') = 'accepted') THEN job END), "
                "COUNT(CASE WHEN kind = ? THEN 1 END) FROM events",
                (events.ENQUEUE, events.PROBE_ACK, events.COMPLETION, events.FAULT_APPLIED)).fetchone()
            last = db.execute("SELECT kind FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return int(enqueued), int(settled), int(faults), None if last is None else str(last[0])
    except sqlite3.Error:
        return 0, 0, 0, None


def _load(db: sqlite3.Connection, kinds: tuple[str, ...]) -> list[Event]:
    loaded: list[Event] = []
    where = f" WHERE kind IN ({','.join('?' * len(kinds))})" if kinds else ""
    cursor = db.execute(f"SELECT seq, mono, wall, source, kind, job, worker, data FROM events{where} ORDER BY seq",
                        kinds)
    while rows := cursor.fetchmany(_LOAD_CHUNK):
        payloads = json.loads("[" + ",".join(row[7] for row in rows) + "]")
        for (seq, mono, wall, source, kind, job, worker, _), data in zip(rows, payloads, strict=True):
            loaded.append(Event(seq, mono, wall, source, kind, job, worker, data))
    return loaded
