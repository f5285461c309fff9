"""Proxies: a listener, its connections, and the data path through their toxics.

The data path is built on asyncio Protocols, not streams: a chunk read from one socket is written to
the other in the same callback while the direction has no toxic (the fast path), with flow control from
the destination's write buffer pausing the source's reads. A direction with toxics queues its chunks
for one task that runs each through the chain in order. As in Toxiproxy, there is no half-close: when
either side ends, the whole connection closes.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from chaos.toxiproxy.toxics import BEHAVIOURS, STREAMS, Behaviour, Timeout, Toxic

BACKLOG = 4096  # Go's listen backlog (the kernel's somaxconn, capped there): a burst of connects waits, not drops
# Bytes queued in a toxic chain before the source's reads pause (they resume below a quarter of it). A
# chain that holds chunks for a while (latency) needs the bytes of that while in flight, or it caps the
# rate at queue / delay: its budget is the delay at DELAY_RATE, up to MAX_QUEUE (Go's latency stub holds
# up to 1,024 chunks of at most 32 KiB).
HIGH_WATER = 1 << 20
DELAY_RATE = 2e9  # bytes per second of delay
MAX_QUEUE = 32 << 20
Journal = Callable[[str, str, dict[str, Any]], None]  # (what, proxy, data): what the server saw happen


class ApiFailure(Exception):
    """An operation on a proxy failed the way Toxiproxy reports with 500 (a listen error)."""


class Proxy:
    """One proxy: its listen address, upstream, toxics (per direction, in chain order) and connections."""

    def __init__(self, name: str, listen: str, upstream: str, rng: random.Random, journal: Journal | None) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics: dict[str, list[Toxic]] = {direction: [] for direction in STREAMS}
        self.connections: set[Connection] = set()
        self.rng = rng
        self.journal = journal
        self._listener: asyncio.AbstractServer | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "listen": self.listen, "upstream": self.upstream, "enabled": self.enabled,
                "Logger": {}, "toxics": [t.to_json() for d in STREAMS for t in self.toxics[d]]}

    # -- the listener ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on `listen` (port 0: a free one, then written back as the bound address)."""
        if self.enabled:
            return
        loop = asyncio.get_running_loop()
        try:
            host, port = await resolve(self.listen or ":0")  # no listen: any interface, a free port
        except ValueError as exc:
            raise ApiFailure(f"listen tcp: {exc}") from exc
        try:
            if host and host != "::":
                self._listener = await loop.create_server(lambda: ClientSide(self), host, port, reuse_address=True,
                                                         backlog=BACKLOG)
            else:
                self._listener = await loop.create_server(lambda: ClientSide(self), sock=_any_interface(port),
                                                         backlog=BACKLOG)
        except OSError as exc:
            raise ApiFailure(bind_error(join_address(host, port), exc)) from exc
        bound = self._listener.sockets[0].getsockname()
        self.listen = join_address("::" if not host else bound[0], bound[1])
        self.enabled = True

    async def stop(self) -> None:
        """Close the listener (new connections are refused) and every connection (they read EOF)."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        cut = list(self.connections)
        for connection in cut:
            connection.close()
        if self.enabled and self.journal is not None:
            self.journal("disabled", self.name, {"connections_closed": len(cut)})
        self.enabled = False

    # -- toxics ------------------------------------------------------------------------------------

    def find(self, name: str) -> Toxic | None:
        return next((t for d in STREAMS for t in self.toxics[d] if t.name == name), None)

    def add(self, toxic: Toxic) -> None:
        self.toxics[toxic.direction].append(toxic)
        self._rechain(toxic.direction)

    def changed(self, toxic: Toxic) -> None:
        self._rechain(toxic.direction)

    def remove(self, toxic: Toxic) -> None:
        chain = self.toxics[toxic.direction]
        chain.remove(toxic)
        if toxic.type == "timeout":  # removing a black hole closes the connections it held
            for connection in list(self.connections):
                connection.close()
        self._rechain(toxic.direction)

    def _rechain(self, direction: str) -> None:
        for connection in list(self.connections):
            link = connection.links.get(direction)
            if link is not None:
                link.rechain(self.toxics[direction])

    # -- connections -------------------------------------------------------------------------------

    def accepted(self, client: asyncio.Transport) -> Connection:
        connection = Connection(self, client)
        self.connections.add(connection)
        asyncio.get_running_loop().create_task(connection.dial())
        return connection


class Connection:
    """A client connection and its upstream: two links, one per direction."""

    def __init__(self, proxy: Proxy, client: asyncio.Transport) -> None:
        self.proxy = proxy
        self.client = client
        self.client_side: ClientSide | None = None
        self.upstream: asyncio.Transport | None = None
        self.links: dict[str, Link] = {}
        self.closed = False
        self.linger0 = False  # a reset_peer was in a chain when the connection started: every close is an RST
        # What each side sent before both links existed, by the link it feeds (the client, while the upstream
        # is dialled; the upstream, in the moment between its connect and the links: a server that speaks
        # first, as NATS and SMTP do, greets at once), and the sides that had ended by then.
        self.early: dict[str, list[bytes]] = {direction: [] for direction in STREAMS}
        self.early_eof: set[str] = set()
        # Why each socket's reads are paused (dialling, a full toxic queue, the other side's full write
        # buffer): reads resume only when no reason is left, so one cause never lifts another's pause.
        self.pauses: dict[int, set[str]] = {}
        self.pause(client, "dial")  # until the upstream is connected (uvloop may deliver a first read regardless)

    async def dial(self) -> None:
        """Connect to the upstream; a failure closes the client's connection (it reads EOF)."""
        try:
            host, port = split_address(self.proxy.upstream)
            transport, _ = await asyncio.get_running_loop().create_connection(
                lambda: UpstreamSide(self), host or "127.0.0.1", port)
        except (OSError, ValueError):
            self.close()
            return
        if self.closed:
            transport.close()
            return
        self.upstream = transport
        chains = self.proxy.toxics
        self.links = {"upstream": Link(self, self.client, transport, chains["upstream"]),
                      "downstream": Link(self, transport, self.client, chains["downstream"])}
        if any(t.type == "reset_peer" for d in STREAMS for t in chains[d]):
            self.linger0 = True
        for transport_ in (self.client, transport):
            sock = transport_.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for direction, link in self.links.items():
            for data in self.early[direction]:
                link.feed(data)
            self.early[direction].clear()
        if self.early_eof:
            for direction in sorted(self.early_eof):
                self.links[direction].ended()
            return
        self.resume(self.client, "dial")

    def pause(self, transport: asyncio.Transport, reason: str) -> None:
        reasons = self.pauses.setdefault(id(transport), set())
        if not reasons and not self.closed:
            transport.pause_reading()
        reasons.add(reason)

    def resume(self, transport: asyncio.Transport, reason: str) -> None:
        reasons = self.pauses.setdefault(id(transport), set())
        if reason in reasons:
            reasons.discard(reason)
            if not reasons and not self.closed:
                transport.resume_reading()

    def close(self) -> None:
        """Close both sockets (with an RST when this connection lingers 0)."""
        if self.closed:
            return
        self.closed = True
        self.proxy.connections.discard(self)
        held = sum(link.held for link in self.links.values())
        if held and self.proxy.journal is not None:
            self.proxy.journal("held", self.proxy.name, {"bytes": held})
        for link in self.links.values():
            link.stop()
        for transport in (self.client, self.upstream):
            if transport is None:
                continue
            if self.linger0:
                sock = transport.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                transport.abort()
            else:
                transport.close()


class Link:
    """One direction of a connection: chunks from `source` through the toxics it rolled, to `dest`."""

    def __init__(self, connection: Connection, source: asyncio.Transport, dest: asyncio.Transport,
                 chain: list[Toxic]) -> None:
        self.connection = connection
        self.source = source
        self.dest = dest
        self.held = 0  # bytes toxics swallowed
        self.behaviours: dict[str, Behaviour] = {}
        self.active: list[Behaviour] = []
        self.queue: deque[tuple[float, bytes]] = deque()
        self.queued = 0
        self.high_water = HIGH_WATER
        self.eof = False
        self.interrupted = asyncio.Event()
        self.wake = asyncio.Event()
        self.pump: asyncio.Task[None] | None = None
        self.idle: asyncio.TimerHandle | None = None
        self.rechain(chain)

    def rechain(self, chain: list[Toxic]) -> None:
        """Take the chain as it is now: behaviours keep their state (limit_data's count) across updates,
        and each toxic's toxicity is rolled again for this link, as Toxiproxy re-runs its stubs."""
        kept: dict[str, Behaviour] = {}
        for toxic in chain:
            behaviour = self.behaviours.get(toxic.name)
            if behaviour is None or type(behaviour) is not BEHAVIOURS[toxic.type]:
                behaviour = toxic.behaviour(self.connection.proxy.rng)
            behaviour.attributes = toxic.attributes
            kept[toxic.name] = behaviour
        self.behaviours = kept
        rng = self.connection.proxy.rng
        self.active = [kept[t.name] for t in chain if t.toxicity >= 1 or rng.random() < t.toxicity]
        delay = sum(behaviour.holds_s() for behaviour in self.active)
        self.high_water = int(min(MAX_QUEUE, max(HIGH_WATER, delay * DELAY_RATE)))
        self.interrupted.set()  # in-flight waits end: the chunk being worked on is flushed
        self._arm_idle()
        if self.active and self.pump is None and not self.connection.closed:
            self.pump = asyncio.get_running_loop().create_task(self._run())

    # -- from the protocols ------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if not self.active and self.pump is None:
            self.dest.write(data)  # the fast path
            return
        self.queue.append((time.monotonic(), data))
        self.queued += len(data)
        if self.queued > self.high_water:
            self.connection.pause(self.source, "queue")
        self._arm_idle()
        self.wake.set()

    def ended(self) -> None:
        """The source read EOF: close once the queued chunks (and toxics such as slow_close) are done."""
        self.eof = True
        if self.pump is None:
            self.connection.close()
        else:
            self.wake.set()

    # -- the Stream a toxic acts on -------------------------------------------------------------------

    async def wait(self, seconds: float | None) -> bool:
        if self.interrupted.is_set():
            return False
        try:
            await asyncio.wait_for(self.interrupted.wait(), seconds)
        except TimeoutError:
            return True
        return False

    def close(self) -> None:
        self.connection.close()

    def dropped(self, size: int) -> None:
        self.held += size

    # -- the slow path -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self.connection.closed:
            if self.queue:
                arrival, data = self.queue.popleft()
                self.queued -= len(data)
                if self.queued < self.high_water // 4:
                    self.connection.resume(self.source, "queue")
                self.interrupted.clear()
                await self._through(list(self.active), 0, arrival, data)
                continue
            if self.eof:
                self.interrupted.clear()  # a chain change before the end flushed chunks, not the end's waits
                for behaviour in list(self.active):
                    await behaviour.at_eof(self)
                self.connection.close()
                return
            if not self.active:
                self.pump = None  # back to the fast path: nothing is queued
                return
            self.wake.clear()
            await self.wake.wait()

    async def _through(self, chain: list[Behaviour], index: int, arrival: float, data: bytes) -> None:
        if self.connection.closed:
            return
        if index == len(chain):
            self.dest.write(data)
            return
        await chain[index].run(self, arrival, data, lambda t, d: self._through(chain, index + 1, t, d))

    def _arm_idle(self) -> None:
        """A timeout toxic closes the connection after its timeout with no chunk arriving."""
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        timeouts = [b.idle_timeout_s() for b in self.active if isinstance(b, Timeout)]
        limits = [t for t in timeouts if t is not None]
        if limits and not self.connection.closed:
            self.idle = asyncio.get_running_loop().call_later(min(limits), self.connection.close)

    def stop(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
        if self.pump is not None and self.pump is not asyncio.current_task():
            self.pump.cancel()


class _Side(asyncio.Protocol):
    """Common to both ends: flow control pauses the other end's reads while this end's buffer is full."""

    connection: Connection | None = None
    direction_in = ""  # the link this end's data feeds

    def data_received(self, data: bytes) -> None:
        if self.connection is not None and not self.connection.closed:
            link = self.connection.links.get(self.direction_in)
            if link is not None:
                link.feed(data)
            else:
                self.connection.early[self.direction_in].append(data)

    def eof_received(self) -> bool | None:
        if self.connection is not None:
            link = self.connection.links.get(self.direction_in)
            if link is not None:
                link.ended()
            else:
                self.connection.early_eof.add(self.direction_in)  # the link ends once both exist
        return True  # keep the transport: the link closes it

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connection is not None:
            self.connection.close()

    def pause_writing(self) -> None:
        other = self._other()
        if other is not None and self.connection is not None:
            self.connection.pause(other, "buffer")

    def resume_writing(self) -> None:
        other = self._other()
        if other is not None and self.connection is not None:
            self.connection.resume(other, "buffer")

    def _other(self) -> asyncio.Transport | None:
        return None


class ClientSide(_Side):
    direction_in = "upstream"

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's does not subclass asyncio.Transport, but has its methods)
        self.connection = self.proxy.accepted(cast(asyncio.Transport, transport))

    def _other(self) -> asyncio.Transport | None:
        return self.connection.upstream if self.connection is not None else None


class UpstreamSide(_Side):
    direction_in = "downstream"

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def _other(self) -> asyncio.Transport | None:
        return self.connection.client if self.connection is not None else None


def _any_interface(port: int) -> socket.socket:
    """One dual-stack socket on every interface (IPv4 and IPv6 on one port), as Go's net.Listen("tcp", ":p")."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("::", port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def split_address(address: str) -> tuple[str, int]:
    """("host", port) of "host:port", "[v6]:port" or ":port", read as Go's net.SplitHostPort and port
    lookup read them ("localhost" is 127.0.0.1); ValueError in Go's words when it is none of them."""
    host, port = _split_host_port(address)
    return ("127.0.0.1" if host == "localhost" else host), _port(port)


async def resolve(address: str) -> tuple[str, int]:
    """`split_address` with the host resolved to an IP, IPv4 first as Go's Listen picks; a name that does
    not resolve is Go's lookup error (ValueError)."""
    host, port = split_address(address)
    if not host or _is_ip(host):
        return host, port
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"lookup {host}: no such host") from exc
    found = [str(info[4][0]) for info in infos]
    return next((ip for ip in found if ":" not in ip), found[0]), port


def _split_host_port(address: str) -> tuple[str, str]:
    """Go's net.SplitHostPort, errors and all."""
    def wrong(why: str) -> ValueError:
        return ValueError(f"address {address}: {why}")

    colon = address.rfind(":")
    if colon < 0:
        raise wrong("missing port in address")
    start, end_of_host = 0, 0
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            raise wrong("missing ']' in address")
        if close + 1 == len(address):
            raise wrong("missing port in address")
        if close + 1 != colon:
            raise wrong("too many colons in address" if address[close + 1] == ":" else "missing port in address")
        host = address[1:close]
        start, end_of_host = 1, close + 1
    else:
        host = address[:colon]
        if ":" in host:
            raise wrong("too many colons in address")
    if "[" in address[start:]:
        raise wrong("unexpected '[' in address")
    if "]" in address[end_of_host:]:
        raise wrong("unexpected ']' in address")
    return host, address[colon + 1:]


def _port(port: str) -> int:
    """A port as Go reads one: decimal with an optional sign (an empty one is 0), else a service name."""
    if re.fullmatch(r"[+-]?[0-9]*", port):
        digits = port.lstrip("+-").lstrip("0")[:6] or "0"  # six digits are past 65535 already
        number = -int(digits) if port.startswith("-") else int(digits)
        if not 0 <= number <= 65535:
            raise ValueError(f"address {port}: invalid port")
        return number
    try:
        return socket.getservbyname(port, "tcp")
    except OSError as exc:
        raise ValueError(f"lookup tcp/{port}: unknown port") from exc


def _is_ip(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return True
    return False


def join_address(host: str, port: int) -> str:
    """Go's TCPAddr text: ":port" for any interface, "[v6]:port", "v4:port"."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_error(address: str, exc: OSError) -> str:
    """Go's wording of a failed listen on a resolved address, as Toxiproxy returns it with a 500."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return f"listen tcp {address}: bind: {reason[0].lower()}{reason[1:]}"
