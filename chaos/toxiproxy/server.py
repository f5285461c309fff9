"""The embedded Toxiproxy server: one asyncio event loop runs the HTTP API and every proxy's data path.

`EmbeddedToxiproxy` runs that loop in a thread of the suite's process (a run's partitions need nothing
outside the suite); `serve` runs it in the foreground for `chaos toxiproxy serve`. HTTP/1.1 with
keep-alive and Content-Length bodies, which is what Toxiproxy's clients send, and HTTP/1.0; a request Go's
HTTP server refuses before any handler runs is refused with Go's answer, never by dropping the connection.
"""

from __future__ import annotations

import asyncio
import re
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from chaos.errors import ConfigError, HarnessError
from chaos.toxiproxy.api import VERSION, Api, Response
from chaos.toxiproxy.proxy import Journal

REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented"}
MAX_BODY = 1 << 20  # Go reads any body; this server refuses larger ones (413) rather than hold them
MAX_HEADER_BYTES = (1 << 20) + 4096  # Go's DefaultMaxHeaderBytes, with the slack it allows
RST_AVOIDANCE_S = 0.5  # after a refusal, as Go does: stop writing, read on a while, then close


@dataclass
class Request:
    method: str
    target: str
    version: tuple[int, int]
    headers: dict[str, str]
    body: bytes

    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes it unless told to keep it."""
        tokens = {token.strip().lower() for token in self.headers.get("connection", "").split(",")}
        return "keep-alive" in tokens if self.version < (1, 1) else "close" not in tokens


class Refused(Exception):
    """A request Go's HTTP server answers itself, before any handler: `status` and the body Go writes."""

    def __init__(self, status: int, text: str = "") -> None:
        super().__init__(text)
        self.status = status
        self.text = text or f"{status} {REASONS[status]}"


class HttpApi:
    """Serves an `Api` over HTTP on one listening socket."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.server: asyncio.AbstractServer | None = None
        self._clients: set[asyncio.StreamWriter] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        try:
            self.server = await asyncio.start_server(self._serve, host, port, reuse_address=True,
                                                     limit=MAX_HEADER_BYTES)
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
                try:
                    request = await _read_request(reader)
                except Refused as refusal:
                    await _refuse(reader, writer, refusal)
                    return
                if request is None:
                    return
                response = await self.api.answer(request.method, request.target, request.headers, request.body)
                keep = request.keep_alive()
                writer.write(_render(response, request.version, keep))
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._clients.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request, None at a clean end between requests; Refused as Go's server refuses it."""
    line = await _read_line(reader)
    if line is None:
        return None
    method, _, rest = line.partition(" ")
    target, _, protocol = rest.partition(" ")
    version = re.fullmatch(r"HTTP/1\.(\d{1,3})", protocol)
    if not method or not target or version is None:
        raise Refused(400)  # a malformed request line or HTTP version
    headers: dict[str, str] = {}
    lengths: set[str] = set()
    size = len(line)
    while raw := await _read_line(reader, ended_early=True):
        size += len(raw)
        if size > MAX_HEADER_BYTES:
            raise Refused(431)
        key, colon, value = raw.partition(":")
        if not colon or not key or key != key.strip():
            raise Refused(400)  # a malformed header line
        headers[key.lower()] = value.strip()
        if key.lower() == "content-length":
            lengths.add(value.strip())
    if "transfer-encoding" in headers:
        raise Refused(501, "Unsupported transfer encoding")
    return Request(method, target, (1, int(version.group(1))), headers,
                   await _read_body(reader, lengths))


async def _read_line(reader: asyncio.StreamReader, ended_early: bool = False) -> str | None:
    """One line without its CRLF; None when the stream ends before it begins, where a request may end
    (with `ended_early`, inside one, the end is an IncompleteReadError)."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial or ended_early:
            raise
        return None
    except asyncio.LimitOverrunError as exc:
        raise Refused(431) from exc
    return line.decode("latin-1").rstrip("\r\n")


async def _read_body(reader: asyncio.StreamReader, lengths: set[str]) -> bytes:
    """The body a Content-Length gives, read as Go reads it: one decimal below 2**63 (no sign, no second
    different value), else Go's plain 400; this server refuses one past MAX_BODY with 413."""
    if not lengths or lengths == {""}:
        return b""
    length = lengths.pop()
    if lengths or not re.fullmatch(r"[0-9]{1,19}", length) or int(length) >= 1 << 63:
        raise Refused(400)
    if int(length) > MAX_BODY:
        raise Refused(413)
    return await reader.readexactly(int(length)) if int(length) else b""


async def _refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, refusal: Refused) -> None:
    """Go's own answer to a request it will not read, then the connection closes. What the client still
    sends is read and dropped for a moment first, so that the close is not an RST that loses the answer."""
    writer.write(f"HTTP/1.1 {refusal.status} {REASONS[refusal.status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 f"Connection: close\r\n\r\n{refusal.text}".encode("latin-1"))
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    try:
        async with asyncio.timeout(RST_AVOIDANCE_S):
            while await reader.read(1 << 16):
                pass
    except TimeoutError:
        return


def _render(response: Response, version: tuple[int, int], keep_alive: bool) -> bytes:
    """The response as Go writes it: HTTP/1.0 to an HTTP/1.0 request, whose keep-alive is said explicitly."""
    lines = [f"HTTP/1.{min(version[1], 1)} {response.status} {REASONS.get(response.status, '')}"]
    headers = dict(response.headers)
    if response.status != 204:
        headers["Content-Length"] = str(len(response.body))
    if version < (1, 1) and keep_alive:
        headers["Connection"] = "keep-alive"
    elif version >= (1, 1) and not keep_alive:
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
