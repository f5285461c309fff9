"""The sink speaks plain HTTP/1.1: workers in other languages use ordinary clients, so test with some.

http.client and urllib.request are the standard library's; curl (when installed) is what a shell or Go
or Rust worker's HTTP stack looks like from the wire. Raw sockets check the framing edge cases.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from chaos import probe
from chaos.ledger import Ledger, read_events
from chaos.runtime.http_server import MAX_BYTES
from chaos.runtime.sink import Sink

Post = Callable[[str, str, bytes, dict[str, str]], tuple[int, dict[str, object]]]


def address(sink: Sink) -> tuple[str, int]:
    host, port = sink.url.removeprefix("http://").split(":")
    return host, int(port)


def via_http_client(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", path, body, headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def via_urllib(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a configured proxy
    request = urllib.request.Request(url + path, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=10) as response:
            assert response.headers["Connection"] == "close", "urllib asks for Connection: close"
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def curl(*args: str, data: bytes = b"") -> str:
    command = ["curl", "-sS", "--noproxy", "*", "--http1.1", "--max-time", "10", "--data-binary", "@-", *args]
    return subprocess.run(command, input=data, capture_output=True, check=True, timeout=30).stdout.decode()


def via_curl(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    header_args = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
    text, _, status = curl(*header_args, "-w", r"\n%{http_code}", url + path, data=body).rpartition("\n")
    return int(status), json.loads(text)


needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
CLIENTS = [via_http_client, via_urllib, pytest.param(via_curl, marks=needs_curl)]


def probe_events(ledger: Ledger) -> list[str]:
    """The probes committed (a refused request is journaled apart, as `probe.refused`)."""
    return [e.kind for e in read_events(ledger.path) if e.kind.startswith("probe.") and e.kind != "probe.refused"]


@pytest.mark.parametrize("post", CLIENTS)
def test_a_valid_probe_is_committed_and_answered(sink: Sink, ledger: Ledger, post: Post) -> None:
    body = json.dumps({"job": "job-1", "worker": "w-other", "token": "t"}).encode()
    status, answer = post(sink.url, "/probe/claim", body, {"X-Chaos-Token": sink.token})
    assert status == 200 and answer["ok"] is True
    (event,) = [e for e in read_events(ledger.path) if e.kind == "probe.claim"]
    assert event.seq == answer["seq"] and event.job == "job-1" and event.worker == "w-other"


@pytest.mark.parametrize("post", CLIENTS)
def test_a_probe_without_the_token_gets_401(sink: Sink, ledger: Ledger, post: Post) -> None:
    status, answer = post(sink.url, "/probe/claim", json.dumps({"job": "job-1"}).encode(), {})
    assert status == 401 and "X-Chaos-Token" in str(answer["error"])
    assert probe_events(ledger) == []


@pytest.mark.parametrize("post", CLIENTS)
def test_a_malformed_body_gets_400(sink: Sink, ledger: Ledger, post: Post) -> None:
    status, answer = post(sink.url, "/probe/claim", b"{not json", {"X-Chaos-Token": sink.token})
    assert status == 400 and str(answer["error"]).startswith("the body is not JSON")
    assert probe_events(ledger) == []


def test_http_client_keeps_one_connection_for_many_requests(sink: Sink, ledger: Ledger) -> None:
    conn = http.client.HTTPConnection(*address(sink), timeout=10)
    sockets = []
    for job, token in [("job-1", sink.token), ("job-2", "wrong"), ("job-3", sink.token), ("job-4", sink.token)]:
        conn.request("POST", "/probe/claim", json.dumps({"job": job}), {"X-Chaos-Token": token})
        response = conn.getresponse()
        response.read()
        assert response.status == (200 if token == sink.token else 401) and not response.will_close
        sockets.append(conn.sock)
    conn.close()
    assert sockets[0] is not None and all(s is sockets[0] for s in sockets), "a refusal must not end the connection"
    assert probe_events(ledger) == ["probe.claim"] * 3


def test_http_client_connection_close_is_honoured(sink: Sink) -> None:
    conn = http.client.HTTPConnection(*address(sink), timeout=10)
    conn.request("POST", "/probe/claim", json.dumps({"job": "job-1"}), {"X-Chaos-Token": sink.token,
                                                                       "Connection": "close"})
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("Connection") == "close" and response.will_close
    response.read()
    conn.close()


@needs_curl
@pytest.mark.parametrize(("close", "connects"), [(False, ["1", "0", "0"]), (True, ["1", "1", "1"])])
def test_curl_reuses_its_connection_unless_told_to_close(sink: Sink, close: bool, connects: list[str]) -> None:
    extra = ["-H", "Connection: close"] if close else []
    urls = [f"{sink.url}/probe/{point}" for point in ("claim", "effect", "ack")]
    out = curl("-H", f"X-Chaos-Token: {sink.token}", *extra, "-w", r"\n%{http_code} %{num_connects}\n", *urls,
               data=json.dumps({"job": "job-1", "ok": True}).encode())
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1::2]] == ["200"] * 3
    assert [line.split()[1] for line in lines[1::2]] == connects


def exchange(sink: Sink, data: bytes) -> bytes:
    """Send raw bytes and read until the sink closes the connection."""
    with socket.create_connection(address(sink), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def answer_of(raw: bytes) -> tuple[int, dict[str, str], dict[str, object]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    assert len(body) == int(headers["content-length"]), "one answer, then the connection is closed"
    return int(status_line.split()[1]), headers, json.loads(body)


def request(sink: Sink, body: bytes, *headers: str, line: str = "POST /probe/claim HTTP/1.1") -> bytes:
    host, port = address(sink)
    fields = [f"Host: {host}:{port}", f"X-Chaos-Token: {sink.token}", f"Content-Length: {len(body)}", *headers]
    return "\r\n".join([line, *fields, "", ""]).encode() + body


def test_connection_close_ends_the_connection_after_the_answer(sink: Sink) -> None:
    status, headers, answer = answer_of(exchange(sink, request(sink, b'{"job": "job-1"}', "Connection: close")))
    assert status == 200 and headers["connection"] == "close" and answer["ok"] is True


def test_http_1_0_gets_one_answer_per_connection(sink: Sink) -> None:
    raw = request(sink, b'{"job": "job-1"}', line="POST /probe/claim HTTP/1.0")
    status, headers, _ = answer_of(exchange(sink, raw))
    assert status == 200 and headers["connection"] == "close"


@pytest.mark.parametrize(("raw", "status", "error"), [
    (b"nonsense\r\n\r\n", 400, "malformed request line"),
    (b"POST /probe/claim HTTP/1.1\r\nno colon here\r\n\r\n", 400, "malformed header line"),
    (b"POST /probe/claim HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", 400, "malformed Content-Length"),
    (b"POST /probe/claim HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, "Content-Length"),
    (b"GET /probe/claim HTTP/1.1\r\n\r\n", 405, "send POST"),
    (b"POST /probe/claim HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "Content-Length"),
    (f"POST /probe/claim HTTP/1.1\r\nContent-Length: {MAX_BYTES + 1}\r\n\r\n".encode(), 413, "body over"),
    # more digits than int() parses: its ValueError ended the connection's thread with no answer
    pytest.param(f"POST /probe/claim HTTP/1.1\r\nContent-Length: {'9' * 5000}\r\n\r\n".encode(), 400,
                 "5000 digits", id="5000-digit-Content-Length"),
    # exactly as long as the server reads before refusing: unread bytes would turn its close into a reset
    (b"POST /probe/claim HTTP/1.1\r\nX-Pad: ".ljust(MAX_BYTES + 4, b"a"), 413, "header block over"),
])
def test_bad_framing_is_answered_in_json_and_the_connection_closed(sink: Sink, raw: bytes, status: int,
                                                                   error: str) -> None:
    got, headers, answer = answer_of(exchange(sink, raw))
    assert got == status and error in str(answer["error"]) and headers["connection"] == "close"
    assert status != 405 or headers["allow"] == "POST"


def test_pipelined_requests_are_answered_in_order(sink: Sink) -> None:
    first, second = request(sink, b'{"job": "job-1"}'), request(sink, b'{"job": "job-2"}', "Connection: close")
    raw = exchange(sink, first + second)
    assert raw.count(b"HTTP/1.1 200 OK") == 2
    assert raw.index(b'"seq": 1') < raw.index(b'"seq": 2')


def test_expect_100_continue_is_answered_before_the_body(sink: Sink) -> None:
    body = b'{"job": "job-1"}'
    with socket.create_connection(address(sink), timeout=10) as sock:
        sock.sendall(request(sink, body, "Expect: 100-continue")[: -len(body)])
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_worker_gone_while_held_is_recorded_as_dropped(sink: Sink, ledger: Ledger) -> None:
    gate = sink.arm("before:claim")
    with socket.create_connection(address(sink), timeout=10) as sock:
        sock.sendall(request(sink, b'{"job": "job-1"}'))
        gate.wait(5)
    sink.release(gate)
    dropped = ledger.wait_for(lambda e: e.kind == "probe.dropped", timeout=5)
    assert dropped is not None and dropped.job == "job-1"
    assert "probe.claim" not in [e.kind for e in ledger.events()]


def test_close_answers_held_probes_and_ends_every_server_thread(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    with Sink(ledger) as sink:
        monkeypatch.setenv("CHAOS_SINK_URL", sink.url)
        monkeypatch.setenv("CHAOS_RUN_TOKEN", sink.token)
        idle = http.client.HTTPConnection(*address(sink), timeout=10)
        idle.request("POST", "/probe/claim", json.dumps({"job": "job-1"}), {"X-Chaos-Token": sink.token})
        assert idle.getresponse().read()  # the connection stays open, its server thread waiting for more
        gate = sink.arm("after:effect")
        result: list[dict[str, object]] = []
        held = threading.Thread(target=lambda: result.append(probe.effect("job-2", "t")), daemon=True)
        held.start()
        gate.wait(5)
    held.join(5)
    assert result and result[0]["ok"] is True, "closing releases the gate and the answer still goes out"
    assert [t.name for t in threading.enumerate() if t.name.startswith("http-")] == []
    idle.close()
    ledger.close()


@pytest.mark.parametrize(("point", "body", "phrase"), [
    ("claim", {"job": "job-1", "token": ["a", "list"]}, "field 'token' of a claim probe must be"),
    ("claim", {"job": "job-1", "pid": "12"}, "field 'pid' of a claim probe must be an integer"),
    ("claim", {"job": 7}, "field 'job' of a claim probe must be a non-empty string"),
    ("ack", {"job": "job-1", "token": "t"}, "a ack probe needs the field 'ok'"),
    ("heartbeat", {"job": "job-1", "ok": "yes"}, "field 'ok' of a heartbeat probe must be true or false"),
    ("effect", {"job": "job-1", "fence": True}, "field 'fence' of a effect probe must be an integer"),
    ("claim", [1, 2], "must be a JSON object"),
])
def test_a_probe_field_of_the_wrong_type_is_refused_when_it_arrives(sink: Sink, ledger: Ledger, point: str,
                                                                    body: object, phrase: str) -> None:
    status, answer = via_http_client(sink.url, f"/probe/{point}", json.dumps(body).encode(),
                                     {"X-Chaos-Token": sink.token})
    assert status == 400 and phrase in str(answer["error"]), answer
    assert probe_events(ledger) == [], "a refused probe never reaches the checker"


@pytest.mark.parametrize("body", [b'{"job": "job-1", "clock": NaN}', b'{"job": "job-1", "clock": Infinity}',
                                  b'{"job": "job-1", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"],
                         ids=["nan", "infinity", "400KB-deep"])
def test_non_numbers_and_deep_nesting_get_400_and_the_sink_keeps_serving(sink: Sink, ledger: Ledger,
                                                                         body: bytes) -> None:
    status, answer = via_http_client(sink.url, "/probe/claim", body, {"X-Chaos-Token": sink.token})
    assert status == 400, answer
    assert via_http_client(sink.url, "/probe/claim", b'{"job": "job-2"}', {"X-Chaos-Token": sink.token})[0] == 200
    assert probe_events(ledger) == ["probe.claim"]
    assert [e.data["status"] for e in read_events(ledger.path) if e.kind == "probe.refused"] == [400]
