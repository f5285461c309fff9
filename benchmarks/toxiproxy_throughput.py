"""Throughput and added latency through the embedded Toxiproxy server, against a direct loopback connection.

What it measures, each figure beside direct loopback's in the same run:
- throughput, with 1 and with 64 concurrent connections: each connection sends its share of --megabytes
  to a discard server, which times the bytes from the first one received to the last; MB/s = total / that
  time;
- latency, with 1 and 64 connections: 1-byte ping-pongs with an echo server, round trip p50 and p99, and
  what the proxy adds to p50;
- a burst: --burst connections opened at once (non-blocking connects from one thread), each sending 4
  bytes and reading their echo; the time until every one is echoed (median of 3 bursts);
- bulk through a latency toxic: --bulk-megabytes on one connection through a proxy whose upstream direction
  has a --latency-ms latency toxic, timed as the throughput above (latency must delay bytes, not cap the
  rate at what may wait out the delay).

The proxy (`chaos toxiproxy serve`, no toxic unless said) and the servers run in processes of their own,
so the client's threads do not share an interpreter with them.

    python3 benchmarks/toxiproxy_throughput.py [--megabytes 2000] [--pings 2000] [--burst 1000]
        [--bulk-megabytes 1000] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import re
import selectors
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUFFER = 256 * 1024


def discard_server() -> None:
    """Child mode: count every byte of every connection; print MB/s once `expect` bytes have come."""
    expect = int(sys.argv[2])
    sock = socket.create_server(("127.0.0.1", 0), backlog=128)
    print(sock.getsockname()[1], flush=True)
    lock = threading.Lock()
    state = {"bytes": 0, "first": 0.0, "last": 0.0}

    def drain(conn: socket.socket) -> None:
        buffer = bytearray(BUFFER)
        view = memoryview(buffer)
        while True:
            n = conn.recv_into(view)
            if not n:
                break
            now = time.monotonic()
            with lock:
                state["first"] = state["first"] or now
                state["bytes"] += n
                state["last"] = now
                if state["bytes"] >= expect:
                    print(json.dumps(state), flush=True)
        conn.close()

    while True:
        conn, _ = sock.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def echo_server() -> None:
    sock = socket.create_server(("127.0.0.1", 0), backlog=128)
    print(sock.getsockname()[1], flush=True)

    def echo(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := conn.recv(65536):
            conn.sendall(data)

    while True:
        conn, _ = sock.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def burst_echo_server() -> None:
    """Child mode: an event-loop echo server with Toxiproxy's backlog, so a burst measures the proxy, not it."""

    class Echo(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.write(data)

    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(serve())


def child(mode: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, __file__, mode, *args], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


class Proxy:
    """`chaos toxiproxy serve` in its own process, and proxies created on it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"],
                                        cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        found = re.search(r":(\d+) ", self.process.stdout.readline())
        assert found is not None
        self.port = int(found.group(1))

    def create(self, name: str, upstream_port: int) -> int:
        created = self.request("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                                    "upstream": f"127.0.0.1:{upstream_port}"})
        return int(created["listen"].rsplit(":", 1)[1])

    def request(self, method: str, path: str, body: object) -> dict[str, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request(method, path, json.dumps(body))
        response = conn.getresponse()
        answer: dict[str, str] = json.loads(response.read())
        assert response.status in (200, 201), answer
        return answer

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def measure_throughput(target_port: int, connections: int, total: int, server: subprocess.Popen[str]) -> float:
    share = total // connections
    payload = b"x" * BUFFER

    def blast() -> None:
        with socket.create_connection(("127.0.0.1", target_port)) as conn:
            sent = 0
            while sent < share:
                piece = payload[: min(BUFFER, share - sent)]
                conn.sendall(piece)
                sent += len(piece)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(1)

    threads = [threading.Thread(target=blast) for _ in range(connections)]
    for thread in threads:
        thread.start()
    assert server.stdout is not None
    state = json.loads(server.stdout.readline())
    for thread in threads:
        thread.join()
    return float(state["bytes"]) / 1e6 / float(state["last"] - state["first"])


def measure_latency(target_port: int, connections: int, pings: int) -> list[float]:
    times: list[float] = []
    lock = threading.Lock()

    def ping() -> None:
        with socket.create_connection(("127.0.0.1", target_port)) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            mine = []
            for _ in range(pings):
                began = time.perf_counter()
                conn.sendall(b"p")
                conn.recv(1)
                mine.append(time.perf_counter() - began)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=ping) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def measure_burst(target_port: int, connections: int) -> float:
    """Seconds from the first of `connections` non-blocking connects until every one has its echo."""
    selector = selectors.DefaultSelector()
    began = time.perf_counter()
    for _ in range(connections):
        conn = socket.socket()
        conn.setblocking(False)
        conn.connect_ex(("127.0.0.1", target_port))
        selector.register(conn, selectors.EVENT_WRITE, conn)
    waiting = connections
    while waiting:
        ready = selector.select(timeout=60)
        assert ready, f"{waiting} connections never echoed"
        for key, events in ready:
            conn = key.data
            if events & selectors.EVENT_WRITE:
                assert conn.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0, "a connect failed"
                conn.send(b"ping")
                selector.modify(conn, selectors.EVENT_READ, conn)
            else:
                assert conn.recv(16) == b"ping"
                selector.unregister(conn)
                conn.close()
                waiting -= 1
    took = time.perf_counter() - began
    selector.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=2000)
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--bulk-megabytes", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=20)
    args = parser.parse_args()
    proxy = Proxy()
    echo, echo_port = child("echo")
    burst_echo, burst_echo_port = child("burst-echo")
    try:
        echo_proxy = proxy.create("echo", echo_port)
        for connections in (1, 64):
            rates = {}
            for route in ("direct", "proxied"):
                server, server_port = child("discard", str(args.megabytes * 1_000_000))
                port = server_port if route == "direct" else proxy.create(f"discard-{connections}", server_port)
                rates[route] = measure_throughput(port, connections, args.megabytes * 1_000_000, server)
                server.kill()
            pings = max(50, args.pings // connections)
            direct = measure_latency(echo_port, connections, pings)
            proxied = measure_latency(echo_proxy, connections, pings)
            p50d, p50p = statistics.median(direct) * 1e6, statistics.median(proxied) * 1e6
            p99p = sorted(proxied)[int(len(proxied) * 0.99)] * 1e6
            print(f"{connections:>2} connection(s): throughput direct {rates['direct']:,.0f} MB/s, proxied "
                  f"{rates['proxied']:,.0f} MB/s ({rates['proxied'] / rates['direct']:.0%} of direct); round trip "
                  f"p50 direct {p50d:.0f} us, proxied {p50p:.0f} us (adds {p50p - p50d:.0f} us), proxied p99 "
                  f"{p99p:.0f} us", flush=True)
        burst_proxy = proxy.create("burst", burst_echo_port)
        times = {route: statistics.median([measure_burst(port, args.burst) for _ in range(3)])
                 for route, port in (("direct", burst_echo_port), ("proxied", burst_proxy))}
        print(f"burst of {args.burst:,} connects, each echoed: direct {times['direct']:.3f} s, proxied "
              f"{times['proxied']:.3f} s ({times['proxied'] / times['direct']:.1f}x direct)", flush=True)
        total = args.bulk_megabytes * 1_000_000
        bulk = {}
        for route in ("direct", "proxied"):
            server, server_port = child("discard", str(total))
            port = server_port
            if route == "proxied":
                port = proxy.create("bulk-latency", server_port)
                proxy.request("POST", "/proxies/bulk-latency/toxics", {
                    "type": "latency", "stream": "upstream", "attributes": {"latency": args.latency_ms}})
            bulk[route] = measure_throughput(port, 1, total, server)
            server.kill()
        print(f"bulk through a {args.latency_ms} ms latency toxic, 1 connection: direct {bulk['direct']:,.0f} MB/s, "
              f"proxied {bulk['proxied']:,.0f} MB/s ({bulk['proxied'] / bulk['direct']:.0%} of direct)", flush=True)
    finally:
        echo.kill()
        burst_echo.kill()
        proxy.close()


CHILDREN = {"discard": discard_server, "echo": echo_server, "burst-echo": burst_echo_server}

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in CHILDREN:
        CHILDREN[sys.argv[1]]()
    else:
        main()
