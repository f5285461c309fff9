"""Worker-side NATS JetStream plumbing shared by the JetStream reference target (and its control): the
run's stream, subject and consumer names, the message format, and a blocking client over nats-py's asyncio
one. Python 3.8 syntax, like the rest of `chaos.worker`; needs the `nats-py` package.

nats-py is asyncio only, while workers keep a job's life on plain threads (a handler thread beside the
heartbeat loop, probes that a gate may hold for as long as a scenario needs): the client runs its event
loop on a thread of its own, and every call blocks on it with a timeout. A connection that is down buffers
nothing (pending_size 0): an ack or a pull request sent into a reconnection fails at once instead of
reaching the server later, from an execution that has long given up on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import nats
import nats.errors

from chaos import events

T = TypeVar("T")
CONNECT_S = 5.0  # the longest a connect waits for a server
CALL_MARGIN_S = 2.0  # how much longer a blocking call waits for the loop than the call's own timeout
# A cut connection, a server restart, a stream a restart lost, a reply that never came.
TRANSIENT = (nats.errors.Error, OSError, asyncio.TimeoutError, concurrent.futures.TimeoutError)


def stream_for(run_id: str) -> str:
    """The run's stream: a JetStream name (no whitespace, '.', '*', '>', path separators), short enough to be
    a directory of the server's store."""
    return ("chaos-" + re.sub(r"[^A-Za-z0-9_-]", "_", run_id))[:120]


class Names:
    """What the run keeps on the server, all named from its stream: the jobs' subject, the durable pull
    consumer every worker shares, and the stream that keeps the server's dead-letter advisories for it
    (MAX_DELIVERIES: delivered max_deliver times and never acked; MSG_TERMINATED: a worker gave up on it)."""

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.subject = stream + ".jobs"
        self.consumer = "workers"
        self.dead_stream = stream + "-dead"
        self.dead_subjects = [f"$JS.EVENT.ADVISORY.CONSUMER.{kind}.{stream}.{self.consumer}"
                              for kind in ("MAX_DELIVERIES", "MSG_TERMINATED")]

    @property
    def next_subject(self) -> str:
        """The pull request's API subject: the server answers on the request's reply subject."""
        return f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}"


def body(job: str, payload: dict[str, Any]) -> bytes:
    return json.dumps({"id": job, "payload": payload}, sort_keys=True).encode()


def parse(raw: bytes) -> tuple[str, dict[str, Any]]:
    data = json.loads(raw)
    return data["id"], data["payload"]


class JetStream:
    """One NATS connection on a private event loop, with blocking calls: `run` any coroutine on it."""

    def __init__(self, url: str, name: str = "", on_event: Callable[[str], None] | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nats", daemon=True)
        self._thread.start()
        self._say = on_event
        try:
            self.nc = self.run(self._connect(url, name), CONNECT_S)
        except BaseException:
            self._stop_loop()
            raise
        self.js = self.nc.jetstream()

    async def _connect(self, url: str, name: str) -> Any:
        async def error(exc: Exception) -> None:
            self._note(f"connection error: {exc!r}")

        async def disconnected() -> None:
            self._note("disconnected")

        async def reconnected() -> None:
            self._note("reconnected")

        # Pings every second, two unanswered close it: a black-holed link is found in about 3 s. A handshake
        # gets a second: one that stalls is tried again soon.
        return await asyncio.wait_for(nats.connect(
            url, name=name or None, connect_timeout=1, allow_reconnect=True, max_reconnect_attempts=-1,
            reconnect_time_wait=0.2, ping_interval=1, max_outstanding_pings=2, pending_size=0,
            error_cb=error, disconnected_cb=disconnected, reconnected_cb=reconnected), CONNECT_S)

    def _note(self, message: str) -> None:
        if self._say is not None:
            self._say(message)

    def epoch(self) -> int:
        """Which connection this is: the count of reconnects, or -1 while disconnected. A server that
        crashed may have forgotten deliveries it made on an earlier connection (its consumer's state is
        written behind), so what this one was handed before a change may no longer be its own."""
        return int(self.nc.stats["reconnects"]) if self.nc.is_connected else -1

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """The coroutine's result, waiting at most `timeout` (plus a margin) for it."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout + CALL_MARGIN_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def request(self, subject: str, payload: bytes, timeout: float) -> Any:
        """A request and its reply (a TimeoutError when none comes within `timeout`)."""
        return self.run(self.nc.request(subject, payload, timeout=timeout), timeout)

    def pull(self, names: Names, wait_s: float) -> tuple[Any | None, float]:
        """One message of the consumer, or None when the server had none within wait_s; with the time
        (time.monotonic()) the pull request left, before the server could have delivered it."""
        sent = time.monotonic()
        return self.run(self._pull(names, wait_s), wait_s + 1.0), sent

    async def _pull(self, names: Names, wait_s: float) -> Any | None:
        """A pull request on an inbox of its own, unsubscribed at once: a message the server sends after
        the wait is dropped here (and redelivered after AckWait), never taken for a later request's."""
        inbox = "_INBOX." + uuid.uuid4().hex
        sub = await self.nc.subscribe(inbox, max_msgs=1)
        try:
            request = json.dumps({"batch": 1, "expires": int(wait_s * 1e9)}).encode()
            await self.nc.publish(names.next_subject, request, reply=inbox)
            try:
                msg = await sub.next_msg(timeout=wait_s + 0.5)
            except nats.errors.TimeoutError:
                return None
        finally:
            try:
                await sub.unsubscribe()
            except nats.errors.Error:
                pass
        if msg.headers and msg.headers.get("Status"):
            return None  # 404 no messages, 408 the request expired, 409 the consumer is gone or busy
        return msg

    def close(self) -> None:
        try:
            self.run(self.nc.close(), 2.0)
        except TRANSIENT:
            pass
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        if not self._thread.is_alive():
            self._loop.close()


def connect(url: str = "", name: str = "", on_event: Callable[[str], None] | None = None) -> JetStream:
    """A client of this worker's own endpoint (by default), named after the worker."""
    return JetStream(url or os.environ[events.ENV_BACKEND_URL], name or os.environ.get(events.ENV_WORKER_ID, ""),
                     on_event)


def names() -> Names:
    """This worker's run's names, from its namespace (the stream)."""
    return Names(os.environ[events.ENV_NAMESPACE])


__all__ = ["TRANSIENT", "JetStream", "Names", "body", "connect", "names", "parse", "stream_for"]
