"""Worker-side probe client: standard library only and Python 3.8 syntax, so it imports inside any
target's virtualenv (often older than the suite's).

Every probe carries the worker's own wall clock (`clock`), so a skewed clock shows in the ledger, and its
monotonic clock when sent (`sent`: CLOCK_MONOTONIC is system-wide, as the ledger's own `mono`), so a claim
whose report a stop or a kill delayed is judged when it was sent, not when it arrived.
A worker calls these at the points of a job's life; each call blocks until the sink has committed the
probe to the ledger (and, when a gate holds it, until the controller releases it).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.parse
from typing import Any

from chaos import events

_local = threading.local()
_ready_pid: int | None = None  # the process that sent `ready` (a forked child sends its own)


class ProbeError(RuntimeError):
    """The sink refused or could not be reached; a worker should treat this as fatal."""


class _Connection:
    """A keep-alive HTTP/1.1 connection to the sink, cheaper than http.client for small JSON POSTs.

    A request leaves in one send; the answer is read as a status line, headers up to the blank line and
    a Content-Length body. No timeout: a gate may hold the answer for as long as a scenario needs.
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.url, self.pid = url, os.getpid()
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._sock: socket.socket | None = None
        self._buffer = b""

    def connect(self) -> socket.socket:
        """The open socket, connecting first if needed (a benchmark connects before its clock starts)."""
        if self._sock is None:
            self._sock = socket.create_connection(self.address, timeout=None)
            # A request larger than one segment would otherwise leave its tail waiting for an ACK.
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._buffer = b""
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def post(self, path: str, token: str, payload: bytes) -> tuple[int, bytes]:
        """Send one POST and return the answer's status and body."""
        host, port = self.address
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                f"{events.TOKEN_HEADER}: {token}\r\nContent-Length: {len(payload)}\r\n\r\n")
        sock = self.connect()
        sock.sendall(head.encode("latin-1") + payload)
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            self._receive(sock)
        status_line, *lines = self._buffer[:end].decode("latin-1").split("\r\n")
        self._buffer = self._buffer[end + 4:]
        status = int(status_line.partition(" ")[2][:3])
        length, close = 0, False
        for line in lines:
            name, _, value = line.partition(":")
            name = name.lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection":
                close = "close" in value.lower()
        while len(self._buffer) < length:
            self._receive(sock)
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        if close:
            self.close()
        return status, body

    def _receive(self, sock: socket.socket) -> None:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the sink closed the connection before answering")
        self._buffer += chunk


def _connection() -> _Connection:
    """This thread's keep-alive connection to the sink named in the environment; a forked child opens its own."""
    url = os.environ[events.ENV_SINK_URL]
    conn: _Connection | None = getattr(_local, "conn", None)
    if conn is None or conn.url != url or conn.pid != os.getpid():
        if conn is not None:
            conn.close()
        conn = _local.conn = _Connection(url)
    return conn


def send(point: str, job: str | None, **fields: Any) -> dict[str, Any]:
    """POST one probe over this thread's keep-alive connection and return the sink's answer (`job` None:
    a worker point such as `ready`, of no job)."""
    body = dict(fields, worker=os.environ.get(events.ENV_WORKER_ID, ""), pid=os.getpid(), clock=time.time())
    if job is not None:
        body["job"] = job
    body.setdefault("sent", time.monotonic())  # a caller that learned of the claim earlier may pass that time
    conn = _connection()
    try:
        status, raw = conn.post(events.PROBE_PATH + urllib.parse.quote(point, safe=""),
                                os.environ.get(events.ENV_RUN_TOKEN, ""), json.dumps(body).encode())
        answer: dict[str, Any] = json.loads(raw or b"{}")
    except (OSError, ValueError) as exc:
        conn.close()
        raise ProbeError(f"probe {point} for job {job} failed: {exc}") from exc
    if status != 200:
        raise ProbeError(f"sink refused probe {point}: {answer.get('error', status)}")
    return answer


def claim(job: str, token: str | int, attempt: int | None = None, sent: float | None = None,
          library_id: str | None = None) -> dict[str, Any]:
    """The worker owns the job; `attempt`: the queue's count of its claims (1 for the first), where it keeps
    one; `sent`: when the worker learned of the claim (its time.monotonic()), if before this call;
    `library_id`: the library's own name for this worker, where the queue's record names that instead."""
    fields: dict[str, Any] = {"token": token}
    if attempt is not None:
        fields["attempt"] = attempt
    if library_id is not None:
        fields["library_id"] = library_id
    if sent is not None:
        fields["sent"] = sent
    return send(events.CLAIM, job, **fields)


def effect(job: str, token: str | int, key: str | None = None, fence: int | None = None) -> dict[str, Any]:
    """Record the external side effect; `accepted` is false when a deduping or fencing sink refused it.
    `fence`: a number that grows with every claim of the job (its attempt, a lease epoch), which the
    `fenced` sink mode orders effects by: one with a fence older than one already seen is refused."""
    fields: dict[str, Any] = {"token": token, "key": key or job}
    if fence is not None:
        fields["fence"] = fence
    return send(events.EFFECT, job, **fields)


def heartbeat(job: str, token: str, ok: bool) -> dict[str, Any]:
    return send(events.HEARTBEAT, job, token=token, ok=ok)


def ack(job: str, token: str, ok: bool | None, source: str | None = None) -> dict[str, Any]:
    """ok: the queue accepted the ack (True), refused it (False), or the worker cannot know (None: the
    connection died while the ack was in flight). `source`: what ok is the word of (events.SOURCES), where
    it is not the worker's own report of the queue's answer: "broker" for a library's ack call to its
    broker that the worker watched return or fail."""
    return send(events.ACK, job, token=token, ok=ok, **({"source": source} if source else {}))


def abandon(job: str, token: str, reason: str = "lost") -> dict[str, Any]:
    """Give the job up; send it before the queue can hand the job to another worker (a requeue after a
    failure), so the ledger never shows another claim while this execution still looks alive."""
    return send(events.ABANDON, job, token=token, reason=reason)


def ready() -> None:
    """The worker has started and polled the queue once, finding nothing to take: it is idle. Call it after
    each empty fetch (where a library hides its fetch, at the library's own signal that its consumer is
    running): only a process's first call sends the probe. `-s warmup=true` enqueues a scenario's jobs
    only once every worker sent it."""
    global _ready_pid
    if _ready_pid != os.getpid():
        send(events.READY, None)
        _ready_pid = os.getpid()
