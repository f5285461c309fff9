"""The queue's own record on Redis: the observer follows the server's replication stream as a replica
(SYNC), the one record of every change the server made in the order it made them, and replays the
processing-list layout from it (chaos.backends.redis.replication.ListModel).

Where the stream starts, and again after the server restarted under it, the observer reads the queue's
keys in one script that also PUBLISHes a nonce: the PUBLISH is replicated at the script's point of the
stream, so the state it read is the model's exactly there, and what happened while the stream was not
followed is inferred from the difference. A read() is a barrier of the same kind: it returns once the
stream has passed a nonce published after read() began, so nothing the server committed before is left out.

Only on the suite's own server: a replica sees every write of every application on a server and copies
its whole dataset, which is not the suite's to do on a server of yours. There the observer covers nothing
and the run judges from the workers' probes alone.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
import urllib.parse
from typing import Any, ClassVar, Protocol

import redis

from chaos.backends.base import Backend
from chaos.backends.redis.layout import READ_LAYOUT, RecordModel, RedisLayout, parse_record_state
from chaos.backends.redis.replication import Change, ListModel, ReplicationRefused, StreamParser, parse_state
from chaos.contract import Contract
from chaos.errors import HarnessError
from chaos.queue_model import QueueRecord
from chaos.worker.redis import Keys

RECONNECT_S = 0.02  # after the stream broke (a restart): soon, so the gap the state must cover stays short
POLL_S = 0.05  # how often the reader looks up from the socket; a diskless transfer's stream starts on an ACK
ACK_S = 1.0  # then the replica's ACK, as a real replica sends it
BARRIER_S = 10.0
INSTALL_S = 20.0

# KEYS: the queue, done hash, dead set; ARGV: the processing lists' pattern, the channel, the nonce, and
# '1' to read the state. The PUBLISH is replicated where the script ran: the state is the stream's there.
SYNC = """
local state = {}
if ARGV[4] == '1' then
  local lists = {}
  for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
    lists[#lists + 1] = key
    lists[#lists + 1] = redis.call('LRANGE', key, 0, -1)
  end
  state = {redis.call('LRANGE', KEYS[1], 0, -1), redis.call('HGETALL', KEYS[2]), redis.call('SMEMBERS', KEYS[3]),
           lists}
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return state"""


class ReplicaModel(Protocol):
    """A key layout replayed from the stream (ListModel; chaos.backends.redis.streams.StreamModel)."""

    stale: bool

    def load(self, state: Any, infer: bool) -> list[Change]: ...

    def apply(self, argv: list[bytes], replay: bool = True) -> list[Change]: ...


BLIND = ("On a Redis server of yours the observer would attach as a replica, which sees every write of every "
         "application on it and copies its whole dataset; it reads the queue's record on the suite's own server "
         "only, so this run judges from the workers' probes alone.")


def _command(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in parts)


class ReplicaObserver:
    """For the processing-list layout of chaos.worker.redis.Keys (redis_reliable's): claims, completions,
    releases and failures, each naming the worker whose processing list the job entered or left."""

    covers = frozenset({"claim", "complete", "release", "fail"})
    note = ""
    sync_script: ClassVar[str] = SYNC  # a layout's own: it reads the state (KEYS, ARGV[1]) where ARGV[4] is '1'

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.keys = Keys(backend.namespace)
        self.channel = self.keys.prefix + "chaos-observer"
        parts = urllib.parse.urlsplit(self.url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.model = self._model(int(parts.path.strip("/") or 0))
        if backend.provider != "local":
            self.covers, self.note = frozenset(), BLIND
        self.client: redis.Redis = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5,
                                                        decode_responses=True)
        self.script = self.client.register_script(self.sync_script)
        self.errors: list[str] = []
        self._nonces = itertools.count(1)
        self._lock = threading.Condition()
        self._records: list[QueueRecord] = []
        self._order = itertools.count(1)
        self._reached = 0  # the latest nonce the stream has passed with the model in step
        self._loaded = False
        self._closed = threading.Event()
        self._socket: socket.socket | None = None
        self._thread = threading.Thread(target=self._follow_forever, name="chaos-redis-replica", daemon=True)

    def install(self) -> None:
        if not self.covers:
            return
        self._thread.start()
        with self._lock:
            if not self._lock.wait_for(lambda: self._loaded or self._closed.is_set(), INSTALL_S):
                raise HarnessError(f"the Redis observer could not follow the replication stream of {self.url} within "
                                   f"{INSTALL_S:g}s: {'; '.join(self.errors[-3:]) or 'no answer'}")

    def read(self) -> list[QueueRecord]:
        if not self.covers:
            return []
        nonce = self._publish(state=False)[0]
        with self._lock:
            if not self._lock.wait_for(lambda: self._reached >= nonce, BARRIER_S):
                raise TimeoutError(f"the replication stream did not pass the observer's barrier within {BARRIER_S:g}s")
            records, self._records = self._records, []
        return records

    def close(self) -> None:
        self._closed.set()
        sock = self._socket
        if sock is not None:
            sock.close()
        if self._thread.is_alive():
            self._thread.join(5)
        self.client.close()

    # -- the layout (a subclass replays another: chaos.backends.redis.streams) ----------------------------

    def _model(self, db: int) -> ReplicaModel:
        return ListModel(self.keys, db)

    def _state_call(self) -> tuple[list[str], str]:
        """The sync script's KEYS and its ARGV[1]."""
        return [self.keys.queue, self.keys.done, self.keys.dead], self.keys.processing_lists()

    def _parse_state(self, reply: Any) -> Any:
        return parse_state(reply, self.keys)

    # -- the stream --------------------------------------------------------------------------------------

    def _publish(self, state: bool) -> tuple[int, Any]:
        """Run the sync script: its nonce, and the state it read (with `state`)."""
        nonce = next(self._nonces)
        keys, arg = self._state_call()
        reply = self.script(keys=keys, args=[arg, self.channel, str(nonce), "1" if state else "0"])
        return nonce, reply

    def _follow_forever(self) -> None:
        while not self._closed.is_set():
            try:
                self._follow()
            except (OSError, ValueError, ReplicationRefused, redis.RedisError) as exc:
                if not self._closed.is_set():
                    self.errors.append(repr(exc))
            self._closed.wait(RECONNECT_S)

    def _follow(self) -> None:
        """Attach as a replica, skip the snapshot, take the state at a nonce, then replay the stream."""
        sock = socket.create_connection(self.address, timeout=5)
        self._socket = sock
        try:
            sock.sendall(_command(b"REPLCONF", b"capa", b"eof"))  # a diskless transfer: no file on the server
            reply = sock.recv(1024)
            if not reply.startswith(b"+"):
                raise ReplicationRefused(reply.decode(errors="replace").strip())
            sock.sendall(_command(b"SYNC"))
            sock.settimeout(POLL_S)
            parser = StreamParser()
            pending: tuple[int, Any] | None = None  # the state read at a nonce the stream has not passed yet
            acked, streaming = 0.0, False
            while not self._closed.is_set():
                try:
                    data = sock.recv(1 << 16)
                except TimeoutError:
                    data = None
                if data == b"":
                    raise ConnectionError("the server closed the replication stream")
                at = time.time()
                commands = parser.feed(data) if data else []
                streaming = streaming or bool(commands)
                if parser.snapshot_done and time.monotonic() - acked >= (ACK_S if streaming else POLL_S):
                    sock.sendall(_command(b"REPLCONF", b"ACK", str(parser.offset).encode()))
                    acked = time.monotonic()
                for argv in commands:
                    pending = self._take(argv, at, pending)
                if parser.snapshot_done and pending is None and not self._in_step():
                    nonce, reply = self._publish(state=True)
                    pending = (nonce, self._parse_state(reply))
        finally:
            self._socket = None
            sock.close()
            with self._lock:
                self._reached = 0  # out of step until the next state: a barrier waits for it

    def _in_step(self) -> bool:
        """Whether the model follows the stream: loaded at a nonce since the stream began, and not stale."""
        with self._lock:
            return self._reached > 0 and not self.model.stale

    def _take(self, argv: list[bytes], at: float, pending: tuple[int, Any] | None) -> tuple[int, Any] | None:
        """One command of the stream: a nonce of ours (the state to load at it, or a barrier passed), or a
        change to replay while the model is in step."""
        in_step = self._in_step()
        if len(argv) == 3 and argv[0].upper() == b"PUBLISH" and argv[1] == self.channel.encode():
            nonce = int(argv[2])
            with self._lock:
                if pending is not None and nonce == pending[0]:
                    self._emit(self.model.load(pending[1], infer=self._loaded), at)
                    self._loaded, pending = True, None
                    self._reached = nonce
                elif in_step:
                    self._reached = max(self._reached, nonce)
                self._lock.notify_all()
            return pending
        changes = self.model.apply(argv, replay=in_step)  # out of step, the state to come holds its effect
        if changes:
            with self._lock:
                self._emit(changes, at)
        return pending

    def _emit(self, changes: list[Any], at: float) -> None:
        for change in changes:
            self._records.append(QueueRecord(change.kind, change.job, change.actor, at, next(self._order),
                                             change.token))


class LayoutObserver(ReplicaObserver):
    """The observer of a layout declared in target.toml's [observer] table (chaos.backends.redis.layout):
    a library's own keys, replayed from the stream with no observer code of its author's. It covers the
    record kinds the layout can show."""

    sync_script: ClassVar[str] = READ_LAYOUT

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract, layout: RedisLayout) -> None:
        self.layout = layout
        self.prefix = backend.namespace
        super().__init__(backend, params, contract)
        if self.covers:
            self.covers = layout.covers

    def _model(self, db: int) -> ReplicaModel:
        return RecordModel(self.layout, self.prefix, db)

    def _state_call(self) -> tuple[list[str], str]:
        return [], "\n".join(self.layout.globs(self.prefix))

    def _parse_state(self, reply: Any) -> Any:
        return parse_record_state(reply, self.layout, self.prefix)
