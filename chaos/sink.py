"""The sink: workers' probes arrive here over HTTP, are committed to the ledger, and only then answered.

It is also the external effect boundary of the seeds: an `effect` probe *is* the side effect, so the
ledger is the ground truth of what the outside world saw. Modes model that boundary: `plain` records
every effect, `idempotent` refuses a key already seen, `fenced` refuses a fence older than one seen.
"""

from __future__ import annotations

import json
import secrets
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chaos.errors import ConfigError
from chaos.gates import Gate, GateSpec, GateTable
from chaos.ledger import Ledger
from chaos.probe import POINTS

SINK_MODES = ("plain", "idempotent", "fenced")


class EffectBoundary:
    """Decides whether an effect is accepted, per the sink mode."""

    def __init__(self, mode: str) -> None:
        if mode not in SINK_MODES:
            raise ConfigError(f"Unknown sink mode {mode!r}: expected one of {', '.join(SINK_MODES)}.")
        self.mode = mode
        self._keys: set[str] = set()
        self._fences: dict[str, int] = {}

    def accept(self, probe: dict[str, Any]) -> bool:
        if self.mode == "idempotent":
            key = str(probe.get("key") or probe["job"])
            fresh = key not in self._keys
            self._keys.add(key)
            return fresh
        if self.mode == "fenced":
            fence = int(probe.get("fence", 0))
            newest = self._fences.get(probe["job"], fence)
            self._fences[probe["job"]] = max(newest, fence)
            return fence >= newest
        return True


class Sink:
    """HTTP server on 127.0.0.1 (free port) taking probes for one run, guarded by the run's token."""

    def __init__(self, ledger: Ledger, mode: str = "plain", token: str | None = None) -> None:
        self.ledger = ledger
        self.token = token or secrets.token_hex(16)
        self.gates = GateTable()
        self._boundary = EffectBoundary(mode)
        self._commit_lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="sink", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Sink:
        self._thread.start()
        return self

    def close(self) -> None:
        """Release every held probe, then stop serving."""
        self.gates.release_all()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Sink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        """Arm a gate such as `after:effect`; journaled so the checker knows a fault was planned."""
        gate = Gate(GateSpec.parse(spec, job=job, worker=worker, nth=nth))
        self.ledger.append("gate.armed", "controller", job=job, worker=worker,
                           data={"gate": gate.id, "spec": str(gate.spec)})
        self.gates.add(gate)
        return gate

    def release(self, gate: Gate) -> None:
        if gate.matched and not gate.released:
            self.ledger.append("gate.released", "controller", job=gate.spec.job, data={"gate": gate.id})
        gate.release()

    def handle(self, point: str, probe: dict[str, Any], client_alive: Any) -> dict[str, Any]:
        """Run one probe through gates and the ledger; returns the answer body."""
        before = self.gates.match("before", point, probe)
        if before is not None:
            self._held(before, point, probe)
            if not client_alive():
                self.ledger.append("probe.dropped", "sink", job=probe["job"], worker=probe.get("worker"),
                                   data=dict(probe, point=point, reason="worker gone while held"))
                return {"ok": False, "dropped": True}
        answer: dict[str, Any] = {"ok": True}
        with self._commit_lock:
            data = {k: v for k, v in probe.items() if k not in ("job", "worker")}
            if point == "effect":
                data["accepted"] = answer["accepted"] = self._boundary.accept(probe)
            event = self.ledger.append(f"probe.{point}", "sink", job=probe["job"], worker=probe.get("worker"),
                                       data=data)
        answer["seq"] = event.seq
        after = self.gates.match("after", point, probe)
        if after is not None:
            self._held(after, point, dict(probe, seq=event.seq))
        return answer

    def _held(self, gate: Gate, point: str, probe: dict[str, Any]) -> None:
        self.ledger.append("gate.matched", "sink", job=probe["job"], worker=probe.get("worker"),
                           data={"gate": gate.id, "spec": str(gate.spec), "point": point, "pid": probe.get("pid")})
        gate.hold()


def _peer_alive(sock: socket.socket) -> bool:
    """False when the worker closed its end (it was killed while its probe was held)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return True
        return sock.recv(1, socket.MSG_PEEK) != b""
    except OSError:
        return False


def _handler_for(sink: Sink) -> type[BaseHTTPRequestHandler]:
    class ProbeHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Send each reply at once: with Nagle on, a reply written in two parts (headers, then body) waits
        # for the client's delayed ACK (~40 ms), capping a keep-alive connection at ~23 probes/s. A
        # buffered wfile, flushed in _reply, also puts headers and body into one send.
        disable_nagle_algorithm = True
        wbufsize = -1

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not secrets.compare_digest(self.headers.get("X-Chaos-Token", ""), sink.token):
                self._reply(401, {"error": "missing or wrong X-Chaos-Token: send the run's CHAOS_RUN_TOKEN"})
                return
            point = self.path.removeprefix("/probe/")
            try:
                probe = json.loads(raw)
                valid = isinstance(probe, dict) and point in POINTS and isinstance(probe.get("job"), str)
            except ValueError:
                valid = False
            if not valid:
                self._reply(400, {"error": f"expected POST /probe/<{'|'.join(POINTS)}> with a JSON object "
                                           "holding at least a string 'job'"})
                return
            self._reply(200, sink.handle(point, probe, lambda: _peer_alive(self.connection)))

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            encoded = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)
                self.wfile.flush()
            except OSError:
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the ledger is the log."""

    return ProbeHandler
