"""The embedded Toxiproxy server: one asyncio event loop runs the HTTP API and every proxy's data path.

`EmbeddedToxiproxy` runs that loop in a thread of the suite's process (a run's partitions need nothing
outside the suite); `serve` runs it in the foreground for `chaos toxiproxy serve`. HTTP/1.1 with
keep-alive and Content-Length bodies, which is what Toxiproxy's clients send.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from chaos.errors import ConfigError, HarnessError
from chaos.toxiproxy.api import VERSION, Api, Response
from chaos.toxiproxy.proxy import Journal

REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large", 500: "Internal Server Error"}
MAX_BODY = 1 << 20
MAX_HEADER_LINES = 100


class HttpApi:
    """Serves an `Api` over HTTP on one listening socket."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.server: asyncio.AbstractServer | None = None
        self._clients: set[asyncio.StreamWriter] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        try:
            self.server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        except OSError as exc:
            raise ConfigError(f"The Toxiproxy API cannot listen on {host}:{port} ({exc.strerror or exc}): choose "
                              "another --port (0 picks a free one) or stop what holds that one.") from exc
        address = self.server.sockets[0].getsockname()
        return str(address[0]), int(address[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in list(self._clients):
            writer.close()
        await self.api.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                method, target, headers, body = request
                response = await self.api.answer(method, target, headers, body)
                keep = headers.get("connection", "").lower() != "close"
                writer.write(_render(response, keep))
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            self._clients.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    line = await reader.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = (await reader.readline()).decode("latin-1").rstrip("\r\n")
        if not raw:
            break
        key, _, value = raw.partition(":")
        headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    if length < 0 or length > MAX_BODY:
        raise ValueError(f"body of {length} bytes")
    body = await reader.readexactly(length) if length else b""
    return method, target, headers, body


def _render(response: Response, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, '')}"]
    headers = dict(response.headers)
    if response.status != 204:
        headers["Content-Length"] = str(len(response.body))
    if not keep_alive:
        headers["Connection"] = "close"
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + response.body


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it is installed (a dependency on Linux and macOS): on the proxy's data path
    it cuts what the proxy adds to a round trip from 260 to 65 us and raises its throughput by a fifth;
    asyncio's own loop otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class EmbeddedToxiproxy:
    """The server on its own event loop in a daemon thread; `url` once started, `close()` stops every
    proxy and connection."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, journal: Journal | None = None) -> None:
        self.host, self.port = host, port
        self.loop = new_loop()
        self.http = HttpApi(Api(journal))
        self._thread = threading.Thread(target=self.loop.run_forever, name="toxiproxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmbeddedToxiproxy:
        self._thread.start()
        self.host, self.port = self.call(self.http.start(self.host, self.port))
        return self

    def call(self, coroutine: Any) -> Any:
        """Run a coroutine on the server's loop and wait for its result."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout=30)
        except TimeoutError as exc:
            raise HarnessError("the embedded Toxiproxy server did not answer within 30 s") from exc

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self.call(self.http.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    def __enter__(self) -> EmbeddedToxiproxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(host: str, port: int, announce: Callable[[str], None]) -> None:
    """Run the server in the foreground until SIGINT or SIGTERM, then close every proxy."""

    async def main() -> None:
        http = HttpApi(Api())
        bound_host, bound_port = await http.start(host, port)
        announce(f"toxiproxy API listening on http://{bound_host}:{bound_port} (speaks Toxiproxy {VERSION})")
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopped.set)
        await stopped.wait()
        await http.close()

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
