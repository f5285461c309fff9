"""A small HTTP/1.1 server for JSON POSTs on 127.0.0.1, written for the sink's throughput.

http.server parses every header block with the email package and answers through buffered files, which
cost the sink more CPU per probe than the ledger commit; here a request is parsed from one buffer and
answered with one `sendall`. Each connection has its own thread, so a request held by a gate blocks only
its own connection.
"""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

MAX_BYTES = 1 << 20  # for the header block and for the body
LENGTH_DIGITS = 18  # the most a Content-Length may have (leading zeros aside): a length a 64-bit count holds
_RECV_BYTES = 65536


@dataclass
class Request:
    """One POST request; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: bytes
    sock: socket.socket

    def peer_alive(self) -> bool:
        """False when the client closed its end (a worker killed while its request was held)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False


Handler = Callable[[Request], tuple[int, dict[str, Any]]]


class _Refused(Exception):
    """A request the server answers itself with `status`, then closes the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class JsonPostServer:
    """Serves POSTs on a free port of 127.0.0.1; the handler returns a status and a JSON body."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._listener = socket.create_server(("127.0.0.1", 0))
        host, port = self._listener.getsockname()[:2]
        self.address: tuple[str, int] = (host, port)
        self._acceptor = threading.Thread(target=self._accept_loop, name="http-accept", daemon=True)
        self._lock = threading.Condition()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._busy = 0
        self._closing = False

    def start(self) -> None:
        self._acceptor.start()

    def close(self) -> None:
        """Stop accepting, let requests being handled send their answers, then end every connection."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if self._acceptor.is_alive():
            socket.create_connection(self.address).close()  # wakes the blocking accept()
            self._acceptor.join()
        self._listener.close()
        with self._lock:
            self._lock.wait_for(lambda: self._busy == 0)
            connections = dict(self._connections)
        for sock in connections:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in connections.values():
            thread.join()

    def _accept_loop(self) -> None:
        while True:
            sock, _ = self._listener.accept()
            with self._lock:
                if self._closing:
                    sock.close()
                    return
                # Answers go out in one send; Nagle would still hold a small one for the peer's delayed ACK.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                thread = threading.Thread(target=self._serve, args=(sock,), name="http-connection", daemon=True)
                self._connections[sock] = thread
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        """Answer requests on one connection until either side closes it."""
        reader = _Reader(sock)
        try:
            while self._serve_one(sock, reader):
                pass
        finally:
            sock.close()
            with self._lock:
                del self._connections[sock]

    def _serve_one(self, sock: socket.socket, reader: _Reader) -> bool:
        """Read and answer one request; false when the connection is to end."""
        try:
            request, keep_alive = reader.request()
        except _Refused as exc:
            with suppress(OSError):
                sock.sendall(_response(exc.status, {"error": str(exc)}, keep_alive=False))
            return False
        except OSError:
            return False
        with self._lock:
            if request is None or self._closing:
                return False
            self._busy += 1
        try:
            status, body = self._handler(request)
            sock.sendall(_response(status, body, keep_alive))
        except OSError:
            return False
        finally:
            with self._lock:
                self._busy -= 1
                self._lock.notify_all()
        return keep_alive


def _response(status: int, body: dict[str, Any], keep_alive: bool) -> bytes:
    """Status line, headers and JSON body as one piece, so the answer leaves in one send."""
    payload = json.dumps(body).encode()
    allow = "Allow: POST\r\n" if status == HTTPStatus.METHOD_NOT_ALLOWED else ""
    connection = "" if keep_alive else "Connection: close\r\n"
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nDate: {_http_date(int(time.time()))}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n{allow}{connection}\r\n")
    return head.encode("latin-1") + payload


@functools.lru_cache(maxsize=1)
def _http_date(second: int) -> str:
    """The Date header for this second; formatting it for every answer costs more than the rest of the head."""
    return formatdate(second, usegmt=True)


class _Reader:
    """Reads requests off one connection; bytes past a request wait in the buffer for the next."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def request(self) -> tuple[Request | None, bool]:
        """The next request and whether the connection stays open after it; None at a clean end."""
        while (end := self._buffer.find(b"\r\n\r\n", 0, MAX_BYTES + 4)) < 0:
            if len(self._buffer) >= MAX_BYTES + 4:
                raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"header block over {MAX_BYTES} bytes")
            if not self._receive():
                if self._buffer.strip():
                    raise _Refused(HTTPStatus.BAD_REQUEST, "connection ended inside the request's header block")
                return None, False
        request_line, *lines = self._buffer[:end].decode("latin-1").split("\r\n")
        self._buffer = self._buffer[end + 4:]
        method, path, version = _split_request_line(request_line)
        headers = _parse_headers(lines)
        if method != "POST":
            raise _Refused(HTTPStatus.METHOD_NOT_ALLOWED, f"method {method} not allowed: send POST")
        body = self._body(headers)
        # Persistent connections are HTTP/1.1's default; an HTTP/1.0 client gets one answer per connection.
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        keep_alive = version == "HTTP/1.1" and "close" not in tokens
        return Request(path, headers, body, self._sock), keep_alive

    def _body(self, headers: dict[str, str]) -> bytes:
        if "transfer-encoding" in headers:
            raise _Refused(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length (no transfer coding)")
        text = headers.get("content-length", "0")
        if not (text.isascii() and text.isdigit()):
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed Content-Length {text[:40]!r}")
        digits = text.lstrip("0") or "0"
        if len(digits) > LENGTH_DIGITS:  # beyond any length, and beyond what int() parses (4,300 digits)
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed Content-Length: {len(digits)} digits, not a length")
        length = int(digits)
        if length > MAX_BYTES:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BYTES} bytes")
        if len(self._buffer) < length and headers.get("expect", "").lower() == "100-continue":
            self._sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while len(self._buffer) < length:
            if not self._receive():
                raise _Refused(HTTPStatus.BAD_REQUEST, "connection ended inside the body")
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return body

    def _receive(self) -> bool:
        chunk = self._sock.recv(_RECV_BYTES)
        self._buffer += chunk
        return chunk != b""


def _split_request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1") or not parts[1].startswith("/"):
        raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed request line {line[:100]!r}")
    return parts[0], parts[1], parts[2]


def _parse_headers(lines: list[str]) -> dict[str, str]:
    """Header fields by lower-cased name; a repeated field's values are joined with commas (RFC 9110)."""
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed header line {line[:100]!r}")
        key, value = name.lower(), value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers
