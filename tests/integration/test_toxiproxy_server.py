"""The embedded Toxiproxy server against ../shared/reference/toxiproxy-api.md: every endpoint over raw
HTTP and through the toxiproxy-python client, every toxic measured on real loopback sockets, the error
responses, and many connections at once."""

from __future__ import annotations

import errno
import http.client
import json
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from chaos.toxiproxy.server import EmbeddedToxiproxy


class EchoServer:
    """A TCP echo server on loopback (a thread per connection); `port`, and `close()`."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
                self._accepted(conn)
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _accepted(self, conn: socket.socket) -> None:
        """What the server does the moment it accepts, before a thread starts to serve the connection."""

    @staticmethod
    def _serve(conn: socket.socket) -> None:
        with conn:
            while data := _recv(conn):
                conn.sendall(data)

    def close(self) -> None:
        self.sock.close()


class GreetingServer(EchoServer):
    """A server that speaks first, as NATS (INFO) and SMTP do: a greeting the moment it accepts, and
    nothing back for what it is sent (so a greeting the proxy turned around never reaches the client)."""

    GREETING = b'INFO {"server_id":"greets-first"}\r\n'

    def _accepted(self, conn: socket.socket) -> None:
        conn.sendall(self.GREETING)

    @staticmethod
    def _serve(conn: socket.socket) -> None:
        with conn:
            while _recv(conn):
                pass


def _recv(conn: socket.socket) -> bytes:
    try:
        return conn.recv(65536)
    except OSError:
        return b""


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def server() -> Iterator[EmbeddedToxiproxy]:
    with EmbeddedToxiproxy() as embedded:
        yield embedded


class Api(Protocol):
    """Where a Toxiproxy API listens: the embedded server in this process, or `chaos toxiproxy serve`."""

    host: str
    port: int


@dataclass
class Served:
    host: str
    port: int
    process: subprocess.Popen[str]


def call(server: Api, method: str, path: str, body: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=payload, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def create(server: Api, echo: EchoServer, name: str = "echo") -> dict[str, Any]:
    status, _, body = call(server, "POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                                         "upstream": f"127.0.0.1:{echo.port}"})
    assert status == 201, body
    created: dict[str, Any] = json.loads(body)
    return created


def connect(proxy: dict[str, Any]) -> socket.socket:
    host, port = proxy["listen"].rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=5)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def round_trip(conn: socket.socket, data: bytes) -> tuple[bytes, float]:
    began = time.monotonic()
    conn.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = conn.recv(65536)
        if not chunk:
            break
        got += chunk
    return got, time.monotonic() - began


def add_toxic(server: Api, proxy: str, toxic: dict[str, Any]) -> dict[str, Any]:
    status, _, body = call(server, "POST", f"/proxies/{proxy}/toxics", toxic)
    assert status == 200, body
    added: dict[str, Any] = json.loads(body)
    return added


@pytest.mark.parametrize("toxic", [None, {"type": "latency", "attributes": {"latency": 5, "jitter": 2}}])
def test_a_server_that_speaks_first_is_heard_on_every_connection(server: EmbeddedToxiproxy,
                                                                 toxic: dict[str, Any] | None) -> None:
    # The upstream's greeting can arrive before the proxy has set up the connection's two directions
    # (uvloop reads at once): it was once taken for the client's early bytes and sent back upstream, and
    # about one NATS connection in seven through the proxy heard nothing and timed out.
    greeter = GreetingServer()
    try:
        proxy = create(server, greeter, "greeter")
        if toxic is not None:
            add_toxic(server, "greeter", toxic)
        for number in range(1, 201):
            with connect(proxy) as conn:
                conn.settimeout(1.0)
                greeting = b""
                while len(greeting) < len(GreetingServer.GREETING) and (chunk := _recv(conn)):
                    greeting += chunk
            assert greeting == GreetingServer.GREETING, f"connection {number} heard {greeting!r}"
    finally:
        greeter.close()


# -- the API, raw ----------------------------------------------------------------------------------


def test_proxy_lifecycle_over_raw_http(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    status, headers, body = call(server, "GET", "/proxies")
    assert (status, body, headers["content-type"]) == (200, b"{}", "application/json")
    proxy = create(server, echo)
    assert list(proxy) == ["name", "listen", "upstream", "enabled", "Logger", "toxics"]
    assert proxy["enabled"] is True and proxy["toxics"] == [] and not proxy["listen"].endswith(":0")
    assert len(headers["x-toxiproxy-request-id"]) == 20
    status, _, body = call(server, "GET", "/proxies/echo")
    assert status == 200 and json.loads(body) == proxy
    status, _, body = call(server, "PATCH", "/proxies/echo", {"enabled": False, "name": "renamed"})
    assert status == 200 and json.loads(body)["enabled"] is False and json.loads(body)["name"] == "echo"
    status, _, body = call(server, "POST", "/proxies/echo", {"enabled": True})
    assert status == 200 and json.loads(body)["listen"] == proxy["listen"], "re-enabled on the same port"
    status, _, body = call(server, "DELETE", "/proxies/echo")
    assert (status, body) == (204, b"")
    assert call(server, "DELETE", "/proxies/echo")[0] == 404


def test_error_responses_match_toxiproxy(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    create(server, echo)
    status, headers, body = call(server, "POST", "/proxies", {"name": "echo", "upstream": "127.0.0.1:1"})
    assert (status, body) == (409, b'{"error":"proxy already exists","status":409}\n')
    assert headers["content-type"] == "text/plain; charset=utf-8" and headers["x-content-type-options"] == "nosniff"
    assert call(server, "GET", "/proxies/nope")[2] == b'{"error":"proxy not found","status":404}\n'
    assert call(server, "POST", "/proxies", {"upstream": "x:1"})[2] == \
        b'{"error":"missing required field: name","status":400}\n'
    assert call(server, "POST", "/proxies", {"name": "x"})[2] == \
        b'{"error":"missing required field: upstream","status":400}\n'
    assert call(server, "POST", "/proxies", raw=b"")[2] == b'{"error":"bad request body: EOF","status":400}\n'
    assert call(server, "POST", "/proxies", raw=b"{bad")[2] == (
        b'{"error":"bad request body: invalid character \'b\' looking for beginning of object key string",'
        b'"status":400}\n')
    assert call(server, "POST", "/proxies/echo/toxics", {"type": "bogus"})[2] == \
        b'{"error":"invalid toxic type","status":400}\n'
    assert call(server, "POST", "/proxies/echo/toxics", {"type": "latency", "stream": "sideways"})[2] == \
        b'{"error":"stream was invalid, can be either upstream or downstream","status":400}\n'
    status, _, body = call(server, "POST", "/proxies/echo/toxics", {"type": "latency", "attributes": {"latency": "1"}})
    assert status == 400 and b"cannot unmarshal string into Go struct field LatencyToxic.attributes.latency of " \
                              b"type int64" in body
    add_toxic(server, "echo", {"type": "latency", "stream": "upstream"})
    assert call(server, "POST", "/proxies/echo/toxics", {"type": "latency", "stream": "upstream"})[0] == 409
    assert call(server, "GET", "/proxies/echo/toxics/nope")[2] == b'{"error":"toxic not found","status":404}\n'
    status, headers, body = call(server, "PUT", "/proxies")
    assert (status, body) == (405, b"") and "content-type" not in headers
    status, headers, body = call(server, "GET", "/nowhere")
    assert (status, body) == (404, b"404 page not found\n")
    status, _, body = call(server, "GET", "/proxies", headers={"User-Agent": "Mozilla/5.0"})
    assert (status, body) == (403, b"User agent not allowed\n")


def test_a_port_in_use_is_a_500_naming_the_address(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    status, _, body = call(server, "POST", "/proxies", {"name": "clash", "listen": f"127.0.0.1:{echo.port}",
                                                         "upstream": "127.0.0.1:1"})
    assert status == 500
    assert json.loads(body)["error"] == f"listen tcp 127.0.0.1:{echo.port}: bind: address already in use"
    assert call(server, "GET", "/proxies/clash")[0] == 404, "a proxy that cannot listen is not added"


def test_toxic_endpoints_and_shapes(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    create(server, echo)
    toxic = add_toxic(server, "echo", {"type": "latency", "stream": "UpStream", "attributes": {"latency": 5}})
    assert toxic == {"attributes": {"latency": 5, "jitter": 0}, "name": "latency_UpStream", "type": "latency",
                     "stream": "UpStream", "toxicity": 1}
    add_toxic(server, "echo", {"name": "slow", "type": "bandwidth", "toxicity": 0.5, "attributes": {"rate": 10}})
    add_toxic(server, "echo", {"name": "late", "type": "latency", "stream": "upstream"})
    status, _, body = call(server, "GET", "/proxies/echo/toxics")
    assert [t["name"] for t in json.loads(body)] == ["latency_UpStream", "late", "slow"], "upstream chain first"
    status, _, body = call(server, "PATCH", "/proxies/echo/toxics/latency_UpStream",
                           {"attributes": {"jitter": 2}, "type": "timeout"})
    assert json.loads(body)["attributes"] == {"latency": 5, "jitter": 2} and json.loads(body)["type"] == "latency"
    assert json.loads(call(server, "GET", "/proxies/echo/toxics/slow")[2])["toxicity"] == 0.5
    assert json.loads(call(server, "GET", "/proxies/echo")[2])["toxics"][0]["name"] == "latency_UpStream"
    assert call(server, "DELETE", "/proxies/echo/toxics/slow")[0] == 204
    assert call(server, "DELETE", "/proxies/echo/toxics/slow")[0] == 404
    assert call(server, "POST", "/reset")[0] == 204
    assert json.loads(call(server, "GET", "/proxies/echo/toxics")[2]) == []


def test_populate_creates_keeps_and_validates_first(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    upstream = f"127.0.0.1:{echo.port}"
    status, _, body = call(server, "POST", "/populate", [{"name": "a", "listen": "127.0.0.1:0", "upstream": upstream},
                                                         {"name": "b", "listen": "127.0.0.1:0", "upstream": upstream,
                                                          "enabled": False}])
    assert status == 201 and [p["name"] for p in json.loads(body)["proxies"]] == ["a", "b"]
    a = json.loads(call(server, "GET", "/proxies/a")[2])
    status, _, body = call(server, "POST", "/populate", [{"name": "a", "listen": a["listen"], "upstream": upstream}])
    assert json.loads(body)["proxies"][0] == a, "an unchanged proxy is kept as it is"
    status, _, body = call(server, "POST", "/populate", [{"name": "c", "upstream": upstream}, {"name": "d"}])
    assert (status, json.loads(body)) == (400, {"error": "missing required field: upstream at proxy 2",
                                                "status": 400, "proxies": None})
    assert call(server, "GET", "/proxies/c")[0] == 404, "nothing is created when any item is invalid"
    assert call(server, "POST", "/populate", [])[2] == b'{"proxies":null}'


def test_version(server: EmbeddedToxiproxy) -> None:
    status, headers, body = call(server, "GET", "/version?x=1")
    assert (status, body, headers["content-type"]) == (200, b'{"version": "v2.12.0"}\n',
                                                        "application/json;charset=utf-8")


# -- the API through toxiproxy-python -----------------------------------------------------------------


def test_the_python_client_drives_the_embedded_server(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    APIConsumer.host, APIConsumer.port = server.host, server.port
    client = Toxiproxy()
    assert client.running() and b"v2.12.0" in client.version()
    proxy = client.create(upstream=f"127.0.0.1:{echo.port}", name="echo")
    with pytest.raises(ProxyExists):
        client.create(upstream=f"127.0.0.1:{echo.port}", name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 100})
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="nonsense")
    assert set(proxy.toxics()) == {"latency_downstream"}
    conn = connect(json.loads(call(server, "GET", "/proxies/echo")[2]))
    assert round_trip(conn, b"ping")[1] >= 0.1
    with proxy.down():
        assert conn.recv(10) == b"", "disabling closes the connection"
        assert not client.get_proxy("echo").enabled
    assert client.get_proxy("echo").enabled
    proxy.destroy_toxic("latency_downstream")
    assert client.reset()
    client.destroy_all()
    with pytest.raises(NotFound):
        proxy.destroy_toxic("latency_downstream")
    assert client.proxies() == {}


# -- toxics on real sockets -------------------------------------------------------------------------


def test_latency_and_jitter_are_added_within_tolerance(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    direct = min(round_trip(conn, b"x")[1] for _ in range(5))
    add_toxic(server, "echo", {"type": "latency", "attributes": {"latency": 150}})
    add_toxic(server, "echo", {"type": "latency", "stream": "upstream", "attributes": {"latency": 100, "jitter": 20}})
    times = [round_trip(conn, b"x")[1] for _ in range(5)]
    assert all(0.23 <= t <= 0.30 + direct for t in times), times


def test_bandwidth_limits_the_rate(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "bandwidth", "attributes": {"rate": 200}})  # 200 KB/s downstream
    data, took = round_trip(conn, b"b" * 100_000)
    assert len(data) == 100_000 and 0.45 <= took <= 0.7, took


def test_a_timeout_of_zero_is_a_black_hole_that_holds_the_connection(server: EmbeddedToxiproxy,
                                                                     echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    assert round_trip(conn, b"before")[0] == b"before"
    add_toxic(server, "echo", {"name": "hole", "type": "timeout", "stream": "upstream", "attributes": {"timeout": 0}})
    conn.sendall(b"swallowed")
    conn.settimeout(0.5)
    with pytest.raises(socket.timeout):
        conn.recv(10)  # nothing comes back, and the connection stays open
    assert call(server, "DELETE", "/proxies/echo/toxics/hole")[0] == 204
    conn.settimeout(5)
    assert conn.recv(10) == b"", "removing a timeout toxic closes the connections it held"


def test_a_timeout_closes_an_idle_connection(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    round_trip(conn, b"warm")
    add_toxic(server, "echo", {"type": "timeout", "attributes": {"timeout": 300}})
    began = time.monotonic()
    assert conn.recv(10) == b""
    assert 0.25 <= time.monotonic() - began <= 0.6


def test_reset_peer_sends_an_rst(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    proxy = create(server, echo)
    add_toxic(server, "echo", {"type": "reset_peer", "stream": "upstream", "attributes": {"timeout": 100}})
    conn = connect(proxy)
    time.sleep(0.05)  # the proxy dials the upstream before the link (and its RST setting) starts
    conn.sendall(b"data")
    with pytest.raises(ConnectionResetError) as caught:
        while conn.recv(10):
            pass
    assert caught.value.errno == errno.ECONNRESET


def test_limit_data_closes_after_n_bytes(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "limit_data", "attributes": {"bytes": 10}})
    conn.sendall(b"0123456789abcdefghijklmno")
    got = b""
    while chunk := _recv(conn):
        got += chunk
    assert got == b"0123456789"


def test_slicer_splits_and_paces_the_data(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "slicer", "attributes": {"average_size": 10, "size_variation": 0,
                                                                "delay": 50_000}})
    conn.sendall(b"x" * 35)
    pieces: list[int] = []
    began = time.monotonic()
    while sum(pieces) < 35:
        pieces.append(len(conn.recv(100)))
    assert len(pieces) >= 3 and time.monotonic() - began >= 0.1, pieces


def test_slow_close_delays_the_close(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "slow_close", "stream": "upstream", "attributes": {"delay": 300}})
    round_trip(conn, b"bye")
    began = time.monotonic()
    conn.shutdown(socket.SHUT_WR)
    assert conn.recv(10) == b""
    assert time.monotonic() - began >= 0.28


def test_toxicity_zero_never_applies(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "latency", "toxicity": 0, "attributes": {"latency": 500}})
    assert round_trip(conn, b"x")[1] < 0.2


def test_disable_refuses_new_connections_and_closes_old_ones(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    proxy = create(server, echo)
    conn = connect(proxy)
    round_trip(conn, b"x")
    call(server, "POST", "/proxies/echo", {"enabled": False})
    assert conn.recv(10) == b""
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    call(server, "POST", "/proxies/echo", {"enabled": True})
    assert round_trip(connect(proxy), b"back")[0] == b"back"


def test_an_unreachable_upstream_closes_the_accepted_connection(server: EmbeddedToxiproxy) -> None:
    dead = socket.create_server(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()
    status, _, body = call(server, "POST", "/proxies", {"name": "dead", "listen": "127.0.0.1:0",
                                                         "upstream": f"127.0.0.1:{port}"})
    conn = connect(json.loads(body))
    assert conn.recv(10) == b""


def test_many_connections_at_once(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    proxy = create(server, echo)
    add_toxic(server, "echo", {"type": "latency", "attributes": {"latency": 200}})
    conns = [connect(proxy) for _ in range(200)]
    began = time.monotonic()
    for conn in conns:
        conn.sendall(b"ping")
    assert all(conn.recv(10) == b"ping" for conn in conns)
    assert time.monotonic() - began < 1.5, "200 delayed connections are served at once, not one after another"
    for conn in conns:
        conn.close()


# -- chaos toxiproxy serve ----------------------------------------------------------------------------


def test_serve_runs_in_the_foreground_until_sigterm(echo: EchoServer) -> None:
    server = subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = re.search(r"http://([\d.]+):(\d+)", line)
        assert url is not None, line
        conn = http.client.HTTPConnection(url.group(1), int(url.group(2)), timeout=5)
        conn.request("POST", "/proxies", json.dumps({"name": "echo", "listen": "127.0.0.1:0",
                                                     "upstream": f"127.0.0.1:{echo.port}"}))
        assert conn.getresponse().status == 201
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0
    finally:
        server.kill()
        server.wait()


def test_serve_on_a_port_in_use_is_a_usage_error(echo: EchoServer) -> None:
    done = subprocess.run([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", str(echo.port)],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{echo.port}" in done.stderr and "--port" in done.stderr


# -- found in review: the edges ------------------------------------------------------------------------


def test_a_proxy_without_listen_binds_any_interface_and_one_without_an_upstream_port_closes(
        server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    status, _, body = call(server, "POST", "/proxies", {"name": "any", "upstream": "127.0.0.1"})
    proxy = json.loads(body)
    assert status == 201 and proxy["listen"].startswith("[::]:"), proxy
    port = int(proxy["listen"].rsplit(":", 1)[1])
    for host in ("::1", "127.0.0.1"):  # one port on every interface, IPv6 and IPv4
        conn = socket.create_connection((host, port), timeout=5)
        assert conn.recv(10) == b"", "an upstream without a port cannot be dialled: the client reads EOF"
    call(server, "PATCH", "/proxies/any", {"enabled": False})
    call(server, "PATCH", "/proxies/any", {"enabled": True})
    assert socket.create_connection(("127.0.0.1", port), timeout=5).recv(10) == b"", "re-enabled on the same port"


def test_a_bad_listen_on_update_is_a_500_that_changes_nothing(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    proxy = create(server, echo)
    conn = connect(proxy)
    status, _, body = call(server, "PATCH", "/proxies/echo", {"listen": "127.0.0.1:99999"})
    assert status == 500 and b"invalid port" in body
    assert round_trip(conn, b"still")[0] == b"still", "the proxy and its connections stay"
    assert json.loads(call(server, "GET", "/proxies/echo")[2])["listen"] == proxy["listen"]


def test_slow_close_waits_even_right_after_the_chain_changed(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    round_trip(conn, b"x")
    add_toxic(server, "echo", {"type": "slow_close", "stream": "upstream", "attributes": {"delay": 300}})
    began = time.monotonic()
    conn.shutdown(socket.SHUT_WR)  # no chunk passes between the toxic's arrival and the end
    assert conn.recv(10) == b""
    assert time.monotonic() - began >= 0.28


def test_reset_peer_added_to_a_live_connection_closes_it_with_a_fin(server: EmbeddedToxiproxy,
                                                                    echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    round_trip(conn, b"x")
    add_toxic(server, "echo", {"type": "reset_peer", "stream": "upstream", "attributes": {"timeout": 0}})
    conn.sendall(b"dropped")
    assert conn.recv(10) == b"", "an ordinary EOF, not ECONNRESET"


def test_concurrent_creates_of_one_name_give_one_proxy_and_one_409(server: EmbeddedToxiproxy,
                                                                   echo: EchoServer) -> None:
    spec = {"name": "twin", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{echo.port}"}
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(call(server, "POST", "/proxies", spec)[0]))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [201, 409]


def test_bodies_json_does_not_allow_and_fields_that_do_not_apply(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    create(server, echo)
    assert call(server, "POST", "/proxies/echo/toxics", raw=b'{"type": "latency", "toxicity": NaN}')[2] == \
        b'{"error":"bad request body: invalid character \'N\' looking for beginning of value","status":400}\n'
    assert call(server, "POST", "/proxies/echo/toxics", {"type": "latency", "stream": ""})[0] == 400
    add_toxic(server, "echo", {"type": "latency"})
    status, _, body = call(server, "PATCH", "/proxies/echo/toxics/latency_downstream", {"name": 5, "toxicity": 0.5})
    assert status == 200 and json.loads(body)["name"] == "latency_downstream" and json.loads(body)["toxicity"] == 0.5


def test_null_bodies_and_encoded_names_read_as_toxiproxy_reads_them(server: EmbeddedToxiproxy,
                                                                     echo: EchoServer) -> None:
    missing = b'{"error":"missing required field: name","status":400}\n'
    assert call(server, "POST", "/proxies", raw=b"null")[2] == missing
    assert call(server, "POST", "/populate", raw=b"null")[0:3:2] == (201, b'{"proxies":null}')
    create(server, echo, name="a b")
    assert call(server, "GET", "/proxies/a%20b")[0] == 200
    invalid = b'{"error":"invalid toxic type","status":400}\n'
    assert call(server, "POST", "/proxies/a%20b/toxics", raw=b"null")[2] == invalid


def test_a_slow_reader_pauses_the_sender_instead_of_queueing_without_bound(server: EmbeddedToxiproxy,
                                                                          echo: EchoServer) -> None:
    conn = connect(create(server, echo))
    add_toxic(server, "echo", {"type": "bandwidth", "stream": "upstream", "attributes": {"rate": 100}})
    conn.setblocking(False)
    sent = 0
    began = time.monotonic()
    while time.monotonic() - began < 1.0:  # the proxy lets 100 KB/s through; the rest must push back
        try:
            sent += conn.send(b"z" * 65536)
        except BlockingIOError:
            time.sleep(0.01)
    proxy = next(iter(server.http.api.proxies["echo"].connections))
    assert proxy.links["upstream"].queued < 4 << 20, "the toxic queue stays bounded"
    assert sent < 32 << 20


def test_toxicity_is_a_float32_as_toxiproxy_keeps_it(server: EmbeddedToxiproxy, echo: EchoServer) -> None:
    create(server, echo)
    assert add_toxic(server, "echo", {"type": "noop", "toxicity": 1 / 3})["toxicity"] == 0.33333334
    status, _, body = call(server, "POST", "/proxies/echo/toxics", {"name": "huge", "type": "noop", "toxicity": 1e39})
    assert status == 400 and b"of type float32" in body


# -- issue 17: the API as Go's server answers it ---------------------------------------------------------


def raw_exchange(server: Api, request: bytes) -> tuple[bytes, bool]:
    """Send raw bytes; (what came back, whether the server closed the connection within 3 s)."""
    with socket.create_connection((server.host, server.port), timeout=3) as conn:
        conn.sendall(request)
        got = b""
        try:
            while chunk := conn.recv(65536):
                got += chunk
        except TimeoutError:
            return got, False
        return got, True


def test_an_http10_request_without_connection_is_answered_then_closed(served: Served) -> None:
    server = served  # the CLI's server, `chaos toxiproxy serve`
    got, closed = raw_exchange(server, b"GET /version HTTP/1.0\r\n\r\n")
    assert got.startswith(b"HTTP/1.0 200 OK\r\n") and got.endswith(b'{"version": "v2.12.0"}\n'), got
    assert closed, "Go closes an HTTP/1.0 connection that did not ask for keep-alive"
    got, closed = raw_exchange(server, b"GET /version HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert b"\r\nConnection: keep-alive\r\n" in got and not closed, "asked for, it is kept"


def test_json_field_names_match_case_insensitively_as_go_does(served: Served, echo: EchoServer) -> None:
    server = served  # the CLI's server, `chaos toxiproxy serve`
    status, _, body = call(server, "POST", "/proxies", {"Name": "echo", "Upstream": f"127.0.0.1:{echo.port}",
                                                         "LISTEN": "127.0.0.1:0"})
    assert status == 201, body
    proxy = json.loads(body)
    assert proxy["name"] == "echo" and proxy["upstream"] == f"127.0.0.1:{echo.port}"
    assert proxy["listen"].startswith("127.0.0.1:"), "LISTEN was read, not left empty (every interface)"
    toxic = add_toxic(server, "echo", {"TYPE": "latency", "Stream": "UpStream", "Toxicity": 0.5,
                                       "Attributes": {"Latency": 7, "jitter": 1}})
    assert toxic == {"attributes": {"latency": 7, "jitter": 1}, "name": "latency_UpStream", "type": "latency",
                     "stream": "UpStream", "toxicity": 0.5}
    status, _, body = call(server, "PATCH", "/proxies/echo/toxics/latency_UpStream",
                           {"ATTRIBUTES": {"JITTER": 3}, "toxicITY": 1})
    assert status == 200 and json.loads(body)["attributes"] == {"latency": 7, "jitter": 3}
    assert json.loads(body)["toxicity"] == 1
    status, _, body = call(server, "PATCH", "/proxies/echo", {"Enabled": False})
    assert status == 200 and json.loads(body)["enabled"] is False
    status, _, body = call(server, "POST", "/populate", [{"NAME": "p", "UPSTREAM": "127.0.0.1:1", "Enabled": False}])
    assert status == 201 and json.loads(body)["proxies"][0]["name"] == "p"
    status, _, body = call(server, "POST", "/proxies", raw=b'{"name": "a", "Name": "b", "upstream": "127.0.0.1:1"}')
    assert status == 201 and json.loads(body)["name"] == "b", "as in Go, the last key that names a field wins"
    status, _, body = call(server, "POST", "/proxies", {"Name": 5, "upstream": "127.0.0.1:1"})
    assert (status, json.loads(body)["error"]) == (
        400, "bad request body: json: cannot unmarshal number into Go struct field Proxy.name of type string")


def test_listen_errors_read_as_go_writes_them(served: Served, echo: EchoServer) -> None:
    server = served  # the CLI's server, `chaos toxiproxy serve`
    def error(listen: str) -> str:
        status, _, body = call(server, "POST", "/proxies", {"name": "x", "listen": listen, "upstream": "127.0.0.1:1"})
        assert status == 500, body
        message: str = json.loads(body)["error"]
        return message

    in_use = echo.port
    assert error(f"localhost:{in_use}") == f"listen tcp 127.0.0.1:{in_use}: bind: address already in use", \
        "Go names the resolved address"
    assert error(f":{in_use}") == f"listen tcp :{in_use}: bind: address already in use"
    assert error("127.0.0.1") == "listen tcp: address 127.0.0.1: missing port in address"
    assert error("bad::addr::x") == "listen tcp: address bad::addr::x: too many colons in address"
    assert error("127.0.0.1:99999") == "listen tcp: address 99999: invalid port"
    assert error("127.0.0.1:" + "9" * 5000) == f"listen tcp: address {'9' * 5000}: invalid port"
    assert error("999.1.1.1:80") == "listen tcp: lookup 999.1.1.1: no such host"
    create(server, echo)
    status, _, body = call(server, "PATCH", "/proxies/echo", {"listen": "bad::addr::x"})
    assert (status, json.loads(body)["error"]) == (500, "address bad::addr::x: too many colons in address")


def test_an_integer_attribute_past_int64_is_a_400(served: Served, echo: EchoServer) -> None:
    server = served  # the CLI's server, `chaos toxiproxy serve`
    create(server, echo)
    status, _, body = call(server, "POST", "/proxies/echo/toxics",
                           raw=b'{"type": "latency", "attributes": {"latency": 9223372036854775808}}')
    assert (status, json.loads(body)["error"]) == (400, "bad request body: json: cannot unmarshal number "
                                                   "9223372036854775808 into Go struct field LatencyToxic.attributes"
                                                   ".latency of type int64")
    status, _, body = call(server, "POST", "/proxies/echo/toxics",
                           raw=b'{"type": "slicer", "attributes": {"delay": -9223372036854775809}}')
    assert status == 400 and b"number -9223372036854775809 into Go struct field SlicerToxic" in body
    status, _, body = call(server, "POST", "/proxies/echo/toxics", raw=b'{"type": "latency", "toxicity": '
                           + b"9" * 5000 + b"}")  # past Python's 4,300-digit integer limit
    assert status == 400 and b"of type float32" in body
    assert call(server, "POST", "/proxies/echo/toxics", raw=b'{"type": "latency", "attributes": '
                b'{"latency": 9223372036854775807}}')[0] == 200, "int64's largest is taken"


@pytest.fixture
def served() -> Iterator[Served]:
    """`chaos toxiproxy serve` in a process of its own, whose stderr a test checks."""
    process = subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = re.search(r"http://([\d.]+):(\d+)", process.stdout.readline())
        assert url is not None
        yield Served(url.group(1), int(url.group(2)), process)
    finally:
        process.kill()
        process.wait()


def stopped_stderr(served: Served) -> str:
    process = served.process
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0
    assert process.stderr is not None
    return process.stderr.read()


def test_a_5000_digit_content_length_is_gos_400_not_a_dropped_connection(served: Served) -> None:
    server = served
    for length in (b"9" * 5000, b"-1", b"12x", b"9223372036854775808"):
        got, closed = raw_exchange(server, b"POST /proxies HTTP/1.1\r\nHost: x\r\nContent-Length: " + length
                                   + b"\r\n\r\n{}")
        assert got == (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       b"Connection: close\r\n\r\n400 Bad Request"), (length[:20], got)
        assert closed
    got, closed = raw_exchange(server, b"POST /proxies HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n" + b"x" * 4096)
    assert got.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n") and closed, "a body past 1 MiB: 413"
    assert call(server, "GET", "/version")[0] == 200, "the server still serves"
    assert "Traceback" not in stopped_stderr(served)


def test_deep_nested_json_is_a_400_not_a_traceback(served: Served) -> None:
    server = served
    status, _, body = call(server, "POST", "/proxies", raw=b"[" * 20_000 + b"]" * 20_000)
    assert (status, body) == (400, b'{"error":"bad request body: invalid character \'[\' exceeded max depth",'
                                   b'"status":400}\n'), "past Go's 10,000 levels: Go's own error"
    for body_ in (b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}", b'{"x": "' + b"[" * 20_000 + b'"}'):
        status, _, body = call(server, "POST", "/proxies", raw=body_)
        assert status == 400 and json.loads(body)["status"] == 400, body[:200]
    assert b"exceeded max depth" not in body, "brackets inside a string do not nest"
    status, _, body = call(server, "POST", "/populate", raw=b"[" * 3000 + b"]" * 3000)
    assert status == 400 and json.loads(body)["proxies"] is None
    assert call(server, "GET", "/version")[0] == 200, "the server still serves"
    assert "Traceback" not in stopped_stderr(served)


# -- issue 17: the data path's two cliffs ---------------------------------------------------------------


def listen_overflows() -> int:
    """The kernel's count of connections dropped from full accept queues (this network namespace)."""
    lines = open("/proc/net/netstat").read().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=True):
        if names.startswith("TcpExt:"):
            row = dict(zip(names.split(), values.split(), strict=True))
            return int(row["ListenOverflows"]) + int(row["ListenDrops"])
    raise AssertionError("no TcpExt counters in /proc/net/netstat")


def test_a_burst_of_1000_connects_is_all_echoed_with_no_connect_dropped(server: EmbeddedToxiproxy,
                                                                         echo: EchoServer) -> None:
    host, port = create(server, echo)["listen"].rsplit(":", 1)
    before = listen_overflows()
    selector = selectors.DefaultSelector()
    for number in range(1000):
        conn = socket.socket()
        conn.setblocking(False)
        conn.connect_ex((host, int(port)))
        selector.register(conn, selectors.EVENT_WRITE, (conn, number))
    echoed: set[int] = set()
    while len(echoed) < 1000:
        ready = selector.select(timeout=30)
        assert ready, f"{1000 - len(echoed)} connections never echoed"
        for key, events in ready:
            peer, number = key.data
            if events & selectors.EVENT_WRITE:
                assert peer.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                peer.send(b"%04d" % number)
                selector.modify(peer, selectors.EVENT_READ, key.data)
            else:
                assert peer.recv(16) == b"%04d" % number
                echoed.add(number)
                selector.unregister(peer)
                peer.close()
    selector.close()
    assert listen_overflows() == before, "connects were dropped from a full accept queue (and waited for a resend)"


def test_bulk_through_a_latency_toxic_is_delayed_not_throttled(server: EmbeddedToxiproxy) -> None:
    """24 MiB through 300 ms: every block arrives intact, in order and at least 300 ms after it was
    written; none waits much longer, as it would if only the bytes of one queue could wait out the delay
    at a time (1 MiB per 300 ms: the last block would arrive seconds late)."""
    latency, block, blocks = 0.3, 256 * 1024, 96
    sink = socket.create_server(("127.0.0.1", 0))
    status, _, body = call(server, "POST", "/proxies", {"name": "bulk", "listen": "127.0.0.1:0",
                                                         "upstream": f"127.0.0.1:{sink.getsockname()[1]}"})
    add_toxic(server, "bulk", {"type": "latency", "stream": "upstream", "attributes": {"latency": 300}})
    delays: list[float] = []
    problems: list[str] = []

    def receive() -> None:
        conn, _ = sink.accept()
        with conn:
            for number in range(blocks):
                data = bytearray()
                while len(data) < block and (chunk := conn.recv(block - len(data))):
                    data += chunk
                seq, sent = struct.unpack("!Id", data[:12])
                if seq != number or data[12:] != bytes([number % 251]) * (block - 12):
                    problems.append(f"block {number}: got block {seq}, intact: {data[12:15]!r}")
                    return
                delays.append(time.monotonic() - sent)

    receiver = threading.Thread(target=receive)
    receiver.start()
    with connect(json.loads(body)) as conn:
        for number in range(blocks):
            conn.sendall(struct.pack("!Id", number, time.monotonic()) + bytes([number % 251]) * (block - 12))
        receiver.join(30)
    sink.close()
    assert not problems and len(delays) == blocks, problems
    assert min(delays) >= latency - 0.005, f"a block came {min(delays):.3f} s after it was written"
    assert max(delays) < latency + 0.7, f"a block waited {max(delays):.2f} s for a {latency} s latency"
