"""The queue's own record for a Redis Streams consumer group (targets/redis_streams), from the server's
replication stream, as chaos.backends.redis.observer follows it for processing lists.

Redis replicates a consumer group's ownership explicitly: every delivery (XREADGROUP, XAUTOCLAIM) and
every XCLAIM reaches a replica as `XCLAIM <stream> <group> <consumer> 0 <id> TIME <ms> RETRYCOUNT <n>
FORCE JUSTID LASTID <id>`, naming the consumer and the delivery counter; an XACK as itself; a script's
writes as their effects, in MULTI/EXEC. So an XCLAIM that hands the entry to another consumer, or raises
its counter, is a claim (its token is the workers' own: consumer, entry id, counter), one that changes
neither is a lease extension (or a release's idle mark: no record). An XACK removes the entry from the
pending list of whichever consumer held it, and names no sender: the done hash's HSET in the same
transaction is the completion, by the consumer its token names (the claim the ack script acted for). An
XADD to the dead-letter stream is a failure, by the consumer whose pending entry it names. An ack Redis
accepted from a stale consumer shows here as what it is: a completion by a consumer the group had taken
the entry from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chaos.backends.base import Backend
from chaos.backends.redis.observer import ReplicaModel, ReplicaObserver
from chaos.backends.redis.replication import HARMLESS, Change, ReplayedLayout
from chaos.contract import Contract
from chaos.worker.redis_streams import GROUP, StreamKeys, claim_token, job_of, token_consumer, worker_of

PEL_LIMIT = 100000  # more pending entries than any run makes
# The sync script (chaos.backends.redis.observer.SYNC's frame) reading the group's state. KEYS: stream, done
# hash, dead stream; ARGV: group, channel, nonce, '1' to read. A stream without its group (a server that
# forgot it) has no pending entries.
SYNC = """
local state = {}
if ARGV[4] == '1' then
  local pel = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', """ + str(PEL_LIMIT) + """)
  if pel['err'] then pel = {} end
  state = {redis.call('XRANGE', KEYS[1], '-', '+'), pel, redis.call('HGETALL', KEYS[2]),
           redis.call('XRANGE', KEYS[3], '-', '+')}
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return state"""

# XCLAIM's options after its ids, and how many values each takes.
XCLAIM_OPTIONS = {"IDLE": 1, "TIME": 1, "RETRYCOUNT": 1, "LASTID": 1, "FORCE": 0, "JUSTID": 0}


@dataclass
class StreamState:
    """The group as one read found it: each entry's job, its pending entries (entry id -> consumer and
    delivery counter), the done hash (job -> the completing claim's token) and the dead-lettered jobs."""

    entries: dict[str, str] = field(default_factory=dict)
    pending: dict[str, tuple[str, int]] = field(default_factory=dict)
    done: dict[str, str] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)


def completer(token: str) -> str | None:
    """The worker whose claim a done record's token names."""
    consumer = token_consumer(token)
    return worker_of(consumer) if consumer is not None else None


def parse_state(reply: Any) -> StreamState:
    entries, pel, done_flat, dead = reply
    state = StreamState(done={str(done_flat[i]): str(done_flat[i + 1]) for i in range(0, len(done_flat), 2)},
                        pending={str(i): (str(consumer), int(count)) for i, consumer, _, count in pel})
    for entry_id, fields in entries:
        job = job_of([str(f) for f in fields])
        if job is not None:
            state.entries[str(entry_id)] = job
    for _, fields in dead:
        job = job_of([str(f) for f in fields])
        if job is not None:
            state.dead.add(job)
    return state


class StreamModel(ReplayedLayout):
    """The group replayed from the stream (the module's docstring says how)."""

    def __init__(self, keys: StreamKeys, db: int) -> None:
        super().__init__(db)
        self.keys = keys
        self.state = StreamState()
        self._acked: set[str] = set()  # the jobs whose pending entry an XACK of this transaction removed

    def load(self, state: StreamState, infer: bool) -> list[Change]:
        """Take `state` as the model's here; with `infer`, the changes since the model's own (a restart)."""
        changes = self._difference(state) if infer else []
        self.state = state
        self.stale = False
        self._end_transaction()
        return changes

    def _difference(self, new: StreamState) -> list[Change]:
        old = self.state
        changes: list[Change] = []
        for entry_id, job in sorted(new.entries.items()):
            before, after = old.pending.get(entry_id), new.pending.get(entry_id)
            gone_from = worker_of(before[0]) if before is not None and after is None else None
            if job in new.done and job not in old.done:
                token = new.done[job]
                if before is None or claim_token(before[0], entry_id, before[1]) != token:
                    # claimed and acknowledged while the stream was not followed: the ack script wrote its
                    # done record only while that claim held, so the record names a claim the group made
                    changes.append(Change("claim", job, completer(token), token))
                changes.append(Change("complete", job, completer(token), token))
            elif job in new.dead and job not in old.dead:
                changes.append(Change("fail", job, gone_from))
            elif after is not None and (before is None or before[0] != after[0] or after[1] > before[1]):
                changes.append(Change("claim", job, worker_of(after[0]), claim_token(after[0], entry_id, after[1])))
        return changes

    def _flush(self) -> None:
        self.state = StreamState()

    def _end_transaction(self) -> None:
        self._acked = set()

    def _tracked(self, key: str) -> bool:
        return key in (self.keys.stream, self.keys.done, self.keys.dead)

    def _write(self, name: str, args: list[str]) -> list[Change]:
        keys = self.keys
        if name == "XADD" and len(args) >= 2 and args[0] in (keys.stream, keys.dead):
            return self._xadd(args[0], args[1], args[2:])
        if name == "XCLAIM" and len(args) >= 5 and args[0] == keys.stream and args[1] == GROUP:
            return self._xclaim(args[2], args[4:])
        if name == "XACK" and len(args) >= 3 and args[0] == keys.stream and args[1] == GROUP:
            for entry_id in args[2:]:
                held = self.state.pending.pop(entry_id, None)
                job = self.state.entries.get(entry_id)
                if held is not None and job is not None:
                    self._acked.add(job)
            return []
        if name == "HSET" and args and args[0] == keys.done:
            changes = []
            for job, token in zip(args[1::2], args[2::2], strict=False):
                self.state.done[job] = token
                changes.append(Change("complete", job, completer(token) if job in self._acked else None, token))
            return changes
        if name == "XGROUP" and args and args[0].upper() in ("CREATE", "SETID", "CREATECONSUMER"):
            return []
        if name not in HARMLESS and any(self._tracked(arg) for arg in args):
            self.stale = True  # a write the model cannot replay (XDEL, XTRIM, DEL, XGROUP DESTROY...)
        return []

    def _xadd(self, key: str, entry_id: str, fields: list[str]) -> list[Change]:
        job = job_of(fields)
        if job is None:
            self.stale = True  # an entry whose job the model cannot tell (an XADD with options)
            return []
        if key == self.keys.stream:
            self.state.entries[entry_id] = job
            return []
        if job in self.state.dead:
            return []
        self.state.dead.add(job)
        source = dict(zip(fields[::2], fields[1::2], strict=False)).get("source", "")
        held = self.state.pending.get(source)
        return [Change("fail", job, worker_of(held[0]) if held is not None else None)]

    def _xclaim(self, consumer: str, rest: list[str]) -> list[Change]:
        ids: list[str] = []
        options: dict[str, str] = {}
        index = 0
        while index < len(rest) and rest[index].upper() not in XCLAIM_OPTIONS:
            ids.append(rest[index])
            index += 1
        while index < len(rest):
            option = rest[index].upper()
            width = XCLAIM_OPTIONS.get(option)
            if width is None or (width and index + 1 >= len(rest)):
                self.stale = True
                return []
            options[option] = rest[index + 1] if width else ""
            index += 1 + width
        if "RETRYCOUNT" not in options:
            self.stale = True  # a client's own XCLAIM: the counter it leaves is not in the command
            return []
        count = int(options["RETRYCOUNT"])
        changes = []
        for entry_id in ids:
            before = self.state.pending.get(entry_id)
            self.state.pending[entry_id] = (consumer, count)
            job = self.state.entries.get(entry_id)
            if job is None:
                self.stale = True
            elif before is None or before[0] != consumer or count > before[1]:
                changes.append(Change("claim", job, worker_of(consumer), claim_token(consumer, entry_id, count)))
        return changes


class StreamObserver(ReplicaObserver):
    """Claims, completions and failures of a consumer group laid out by chaos.worker.redis_streams."""

    covers = frozenset({"claim", "complete", "fail"})  # a release keeps the entry its consumer's: no record
    sync_script: ClassVar[str] = SYNC

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.stream_keys = StreamKeys(backend.namespace)
        super().__init__(backend, params, contract)

    def _model(self, db: int) -> ReplicaModel:
        return StreamModel(self.stream_keys, db)

    def _state_call(self) -> tuple[list[str], str]:
        keys = self.stream_keys
        return [keys.stream, keys.done, keys.dead], GROUP

    def _parse_state(self, reply: Any) -> Any:
        return parse_state(reply)
