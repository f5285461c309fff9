"""Redis's own record of what it changed, as its replication stream carries it, read without sockets.

A replica that sent SYNC receives the server's snapshot (skipped here: `$<length>`, or `$EOF:<mark>` for a
diskless transfer) and then every change the server made, in the order it made them: a move served to a
blocked BLMOVE as the LMOVE it did, a script's writes as their effects (in MULTI/EXEC when more than one),
nothing for a command that changed nothing. That is the record `ListModel` reads: which job each move
moved follows from replaying the lists (the stream names no element), who owns it from the processing
list's name, the identity its worker registered in the queue's own keys. MONITOR would not do: it shows
requests as they arrive (a blocked BLMOVE once, when it blocks, never when it is served) and not whether
they took effect; keyspace notifications name no element and are lost when a subscriber lags.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chaos.worker.redis import Keys

MARK_LEN = 40  # a diskless transfer's end mark


class ReplicationRefused(Exception):
    """The server answered SYNC with an error (LOADING after a restart, NOPERM, an unknown command)."""


class StreamParser:
    """The bytes after SYNC: keepalive newlines, the snapshot (skipped), then commands as RESP arrays.
    `offset` counts the command stream's bytes, for the replica's REPLCONF ACK."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.snapshot_done = False
        self.offset = 0
        self._mark: bytes | None = None
        self._left: int | None = None  # snapshot bytes still to skip, for a `$<length>` transfer

    def feed(self, data: bytes) -> list[list[bytes]]:
        self.buf += data
        if not self.snapshot_done and not self._skip_snapshot():
            return []
        commands: list[list[bytes]] = []
        pos = 0
        while True:
            parsed = _array(self.buf, pos)
            if parsed is None:
                break
            command, end = parsed
            commands.append(command)
            self.offset += end - pos
            pos = end
        del self.buf[:pos]
        return commands

    def _skip_snapshot(self) -> bool:
        """Drop the snapshot's bytes; True once they are all gone."""
        if self._left is None and self._mark is None:
            while self.buf[:1] == b"\n":  # the master's keepalives while it prepares the snapshot
                del self.buf[:1]
            end = self.buf.find(b"\r\n")
            if end < 0:
                return False
            line = bytes(self.buf[:end])
            del self.buf[:end + 2]
            if line.startswith(b"-"):
                raise ReplicationRefused(line[1:].decode(errors="replace"))
            if line.startswith(b"$EOF:"):
                self._mark = line[5:]
                if len(self._mark) != MARK_LEN:
                    raise ValueError(f"a diskless transfer's mark of {len(self._mark)} bytes: {line!r}")
            elif line.startswith(b"$"):
                self._left = int(line[1:])
            else:
                raise ValueError(f"expected the snapshot's header after SYNC, got {line[:80]!r}")
        if self._left is not None:
            taken = min(self._left, len(self.buf))
            del self.buf[:taken]
            self._left -= taken
            if self._left:
                return False
        elif self._mark is not None:
            end = self.buf.find(self._mark)
            if end < 0:
                del self.buf[:max(0, len(self.buf) - MARK_LEN)]  # keep what may be the mark's beginning
                return False
            del self.buf[:end + MARK_LEN]
        self.snapshot_done = True
        return True


def _array(buf: bytearray, pos: int) -> tuple[list[bytes], int] | None:
    """One `*N` array of bulk strings from `pos`, and where it ends; None while incomplete."""
    if pos >= len(buf):
        return None
    if buf[pos:pos + 1] != b"*":
        raise ValueError(f"expected a command (a RESP array) in the replication stream: {bytes(buf[pos:pos + 40])!r}")
    line_end = buf.find(b"\r\n", pos)
    if line_end < 0:
        return None
    count = int(buf[pos + 1:line_end])
    pos = line_end + 2
    items: list[bytes] = []
    for _ in range(count):
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return None
        if buf[pos:pos + 1] != b"$":
            raise ValueError(f"expected a bulk string in a replicated command, got {bytes(buf[pos:pos + 40])!r}")
        size = int(buf[pos + 1:line_end])
        start = line_end + 2
        if len(buf) < start + size + 2:
            return None
        items.append(bytes(buf[start:start + size]))
        pos = start + size + 2
    return items, pos


@dataclass(frozen=True)
class Change:
    """One ownership change the stream shows (a QueueRecord but for the observer's clock and order)."""

    kind: str
    job: str
    actor: str | None
    token: str | None = None


@dataclass
class State:
    """The queue's keys as one atomic read found them: every tracked list, the done hash, the dead set."""

    lists: dict[str, list[str]] = field(default_factory=dict)
    done: dict[str, str] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)


def job_of(entry: str) -> str | None:
    """The suite's job id in a queue entry (chaos.worker.redis.entry), None for anything else."""
    try:
        data = json.loads(entry)
    except ValueError:
        return None
    job = data.get("id") if isinstance(data, dict) else None
    return job if isinstance(job, str) else None


def worker_of(identity: str) -> str:
    """The suite's worker name in a processing list's identity (`w1:1f2e3d4c`: worker and process)."""
    return identity.rpartition(":")[0] or identity


# Writes that touch no list, hash or set the model follows, even when they name one of the run's keys.
HARMLESS = {"SET", "PEXPIREAT", "EXPIREAT", "PEXPIRE", "EXPIRE", "PERSIST", "HINCRBY", "HINCRBYFLOAT", "INCR",
            "INCRBY", "DECR", "DECRBY", "PING", "PUBLISH", "REPLCONF", "SETEX", "PSETEX", "GETSET", "GETDEL",
            "SETNX"}


class ReplayedLayout:
    """What every key layout replayed from the stream follows alike: the database a command acts on
    (SELECT), the transaction it belongs to (MULTI/EXEC) and a flush of its database. A layout says how
    its own writes change it (`_write`), what an empty one is (`_flush`) and what it remembers for the
    length of one transaction (`_end_transaction`). `stale` says a write it cannot replay touched its
    keys: the caller reads the state again (`load`)."""

    def __init__(self, db: int) -> None:
        self.db = db
        self.stale = False
        self._selected = -1
        self._in_multi = False

    def apply(self, argv: list[bytes], replay: bool = True) -> list[Change]:
        """One replicated command: the ownership changes it made. Without `replay` (the model is out of
        step until its next `load`) only the selected database and the transaction are followed."""
        if not argv:
            return []
        name = argv[0].decode(errors="replace").upper()
        args = [part.decode("utf-8", errors="surrogateescape") for part in argv[1:]]
        if name == "SELECT":
            self._selected = int(args[0])
            return []
        if name in ("MULTI", "EXEC", "DISCARD"):
            self._in_multi = name == "MULTI"
            self._end_transaction()
            return []
        if not replay:
            return []
        if name == "FLUSHALL" or (name == "FLUSHDB" and self._selected == self.db):
            self._flush()
            return []
        if self._selected != self.db:
            return []
        changes = self._write(name, args)
        if not self._in_multi:
            self._end_transaction()
        return changes

    def _write(self, name: str, args: list[str]) -> list[Change]:
        """The changes one write to the model's database made."""
        raise NotImplementedError

    def _flush(self) -> None:
        """Its database was emptied."""
        raise NotImplementedError

    def _end_transaction(self) -> None:
        """Forget what only the current transaction needed."""
        raise NotImplementedError


class ListModel(ReplayedLayout):
    """The processing-list layout of chaos.worker.redis.Keys, replayed from the stream: the queue, one
    processing list per worker process (named `<worker>:<process>`), the done hash (job -> the completing
    claim's token) and the dead set. A move from the queue into a processing list is a claim by that
    list's worker; its removal from the list together with the job's done entry a completion (with the
    dead set: a failure; pushed back on the queue: a release, as is a move from a processing list back to
    the queue), each naming the worker whose list it left."""

    def __init__(self, keys: Keys, db: int) -> None:
        super().__init__(db)
        self.keys = keys
        self.state = State()
        self._left: dict[str, str] = {}  # job -> the processing identity it was removed from, in this transaction
        self._processing = keys.processing("")

    # -- the keys ----------------------------------------------------------------------------------------

    def identity(self, key: str) -> str | None:
        """The processing identity a key is the list of, None for any other key."""
        return key[len(self._processing):] if key.startswith(self._processing) else None

    def tracked(self, key: str) -> bool:
        return key in (self.keys.queue, self.keys.done, self.keys.dead) or self.identity(key) is not None

    def _list(self, key: str) -> list[str] | None:
        if key == self.keys.queue or self.identity(key) is not None:
            return self.state.lists.setdefault(key, [])
        return None

    # -- the state ---------------------------------------------------------------------------------------

    def load(self, state: State, infer: bool) -> list[Change]:
        """Take `state` as the model's at this point of the stream; with `infer`, the changes between the
        model and it (what happened while the stream was not followed: a restart of the server)."""
        changes = self._difference(state) if infer else []
        self.state = state
        self.stale = False
        self._end_transaction()
        return changes

    def _owners(self, state: State) -> tuple[dict[str, str], set[str]]:
        owners: dict[str, str] = {}
        queued: set[str] = set()
        for key, entries in state.lists.items():
            identity = self.identity(key)
            for entry in entries:
                job = job_of(entry)
                if job is None:
                    continue
                if identity is not None:
                    owners[job] = identity
                else:
                    queued.add(job)
        return owners, queued

    def _difference(self, new: State) -> list[Change]:
        old_owners, _ = self._owners(self.state)
        new_owners, new_queued = self._owners(new)
        changes: list[Change] = []
        jobs = sorted(set(old_owners) | set(new_owners) | new_queued | set(new.done) | new.dead)
        for job in jobs:
            before, after = old_owners.get(job), new_owners.get(job)
            gone_from = worker_of(before) if before is not None else None
            if job in new.done and job not in self.state.done:
                changes.append(Change("complete", job, gone_from if after is None else None, new.done[job]))
            elif job in new.dead and job not in self.state.dead:
                changes.append(Change("fail", job, gone_from if after is None else None))
            elif after is not None and after != before:
                changes.append(Change("claim", job, worker_of(after), after))
            elif before is not None and after is None and job in new_queued:
                changes.append(Change("release", job, gone_from))
        return changes

    # -- the stream --------------------------------------------------------------------------------------

    def _flush(self) -> None:
        self.state = State()

    def _end_transaction(self) -> None:
        self._left = {}

    def _write(self, name: str, args: list[str]) -> list[Change]:
        keys = self.keys
        if name in ("RPUSH", "LPUSH", "RPUSHX", "LPUSHX") and args:
            target = self._list(args[0])
            if target is None:
                return []
            return [change for entry in args[1:] for change in self._push(args[0], target, entry, name[0] == "L")]
        if name in ("LMOVE", "RPOPLPUSH") and len(args) >= 2:
            ends = (args[2].upper(), args[3].upper()) if name == "LMOVE" and len(args) >= 4 else ("RIGHT", "LEFT")
            return self._move(args[0], args[1], ends[0] == "LEFT", ends[1] == "LEFT")
        if name in ("LPOP", "RPOP") and args:
            source = self._list(args[0])
            if source is not None:
                for _ in range(int(args[1]) if len(args) > 1 else 1):
                    if not source:
                        self.stale = True
                        break
                    source.pop(0 if name == "LPOP" else -1)
            return []
        if name == "LREM" and len(args) == 3:
            self._remove(args[0], int(args[1]), args[2])
            return []
        if name in ("HSET", "HMSET", "HSETNX") and args and args[0] == keys.done:
            changes = []
            for job, token in zip(args[1::2], args[2::2], strict=False):
                self.state.done[job] = token
                changes.append(Change("complete", job, self._leaving(job), token))
            return changes
        if name == "HDEL" and args and args[0] == keys.done:
            for job in args[1:]:
                self.state.done.pop(job, None)
            return []
        if name == "SADD" and args and args[0] == keys.dead:
            changes = []
            for job in args[1:]:
                if job not in self.state.dead:
                    self.state.dead.add(job)
                    changes.append(Change("fail", job, self._leaving(job)))
            return changes
        if name == "SREM" and args and args[0] == keys.dead:
            self.state.dead.difference_update(args[1:])
            return []
        if name in ("DEL", "UNLINK"):
            for key in args:
                if key == keys.done:
                    self.state.done.clear()
                elif key == keys.dead:
                    self.state.dead.clear()
                else:
                    self.state.lists.pop(key, None)
            return []
        if name not in HARMLESS and any(self.tracked(arg) for arg in args):
            self.stale = True  # a write the model cannot replay (LSET, RENAME, RESTORE...): read the state again
        return []

    def _leaving(self, job: str) -> str | None:
        """The worker whose processing list this transaction removed the job from."""
        identity = self._left.get(job)
        return worker_of(identity) if identity is not None else None

    def _push(self, key: str, target: list[str], entry: str, left: bool) -> list[Change]:
        if left:
            target.insert(0, entry)
        else:
            target.append(entry)
        job = job_of(entry)
        if job is None:
            return []
        identity = self.identity(key)
        if identity is not None:  # pushed straight into a processing list: a claim by its worker
            return [Change("claim", job, worker_of(identity), identity)]
        if job in self._left:  # back on the queue from a processing list, in one transaction: a release
            return [Change("release", job, self._leaving(job))]
        return []

    def _move(self, source_key: str, target_key: str, from_left: bool, to_left: bool) -> list[Change]:
        source, target = self._list(source_key), self._list(target_key)
        if source is None:
            if target is not None:
                self.stale = True  # an element the model never saw arrived in one of its lists
            return []
        if not source:
            self.stale = True  # the server moved an element the model does not have
            return []
        entry = source.pop(0 if from_left else -1)
        if target is None:
            return []
        if to_left:
            target.insert(0, entry)
        else:
            target.append(entry)
        job = job_of(entry)
        if job is None:
            return []
        before, after = self.identity(source_key), self.identity(target_key)
        if after is not None and after != before:
            return [Change("claim", job, worker_of(after), after)]
        if before is not None and after is None:
            return [Change("release", job, worker_of(before))]
        return []

    def _remove(self, key: str, count: int, entry: str) -> None:
        target = self._list(key)
        if target is None:
            return
        indexes = [i for i, value in enumerate(target) if value == entry]
        chosen = indexes if count == 0 else indexes[:count] if count > 0 else indexes[count:]
        if not chosen:
            self.stale = True  # the server removed what the model does not have
        for index in reversed(chosen):
            del target[index]
        identity, job = self.identity(key), job_of(entry)
        if chosen and identity is not None and job is not None:
            self._left[job] = identity


def parse_state(reply: Any, keys: Keys) -> State:
    """The state script's reply: {queue entries, the done hash flat, the dead set, [list key, entries]...}."""
    queue, done_flat, dead, lists_flat = reply
    state = State(done={str(done_flat[i]): str(done_flat[i + 1]) for i in range(0, len(done_flat), 2)},
                  dead={str(job) for job in dead})
    state.lists[keys.queue] = [str(entry) for entry in queue]
    for key, entries in zip(lists_flat[::2], lists_flat[1::2], strict=True):
        state.lists[str(key)] = [str(entry) for entry in entries]
    return state
