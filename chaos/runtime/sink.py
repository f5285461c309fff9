"""The sink: workers' probes arrive here over HTTP, are committed to the ledger, and only then answered.

It is also the external effect boundary of the seeds: an `effect` probe *is* the side effect, so the
ledger is the ground truth of what the outside world saw. Modes model that boundary: `plain` records
every effect, `idempotent` refuses a key already seen, `fenced` refuses a fence older than one seen.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from typing import Any

from chaos import events
from chaos.errors import ConfigError
from chaos.ledger import Ledger
from chaos.runtime import probe_schema
from chaos.runtime.gates import Gate, GateSpec, GateTable
from chaos.runtime.http_server import JsonPostServer, Request

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
        self._refusals: set[str] = set()
        self._server = JsonPostServer(self._answer)
        # A probe's pid as the host sees it (the supervisor's, once it exists: a worker in a container
        # reports the pid it has in the container's namespace).
        self.host_pid: Callable[[str | None, Any], Any] = lambda worker, pid: pid

    @property
    def url(self) -> str:
        host, port = self._server.address
        return f"http://{host}:{port}"

    def start(self) -> Sink:
        self._server.start()
        return self

    def close(self) -> None:
        """Release every held probe, then stop serving."""
        self.gates.release_all()
        self._server.close()

    def __enter__(self) -> Sink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        """Arm a gate such as `after:effect`; journaled so the checker knows a fault was planned."""
        gate = Gate(GateSpec.parse(spec, job=job, worker=worker, nth=nth))
        self.ledger.append(events.gate_armed(gate.id, str(gate.spec), job, worker))
        self.gates.add(gate)
        return gate

    def release(self, gate: Gate) -> None:
        if gate.matched and not gate.released:
            self.ledger.append(events.gate_released(gate.id, gate.spec.job))
        gate.release()

    def handle(self, point: str, probe: dict[str, Any], client_alive: Callable[[], bool]) -> dict[str, Any]:
        """Run one probe through gates and the ledger; returns the answer body."""
        if "pid" in probe:
            probe["pid"] = self.host_pid(probe.get("worker"), probe["pid"])
        before = self.gates.match("before", point, probe)
        if before:
            self._held(before, point, probe)
            if not client_alive():
                self.ledger.append(events.probe_dropped(point, probe["job"], probe.get("worker"), probe,
                                                        "worker gone while held"))
                return {"ok": False, "dropped": True}
        answer: dict[str, Any] = {"ok": True}
        with self._commit_lock:
            data = {k: v for k, v in probe.items() if k not in ("job", "worker")}
            if point == events.EFFECT:
                data["accepted"] = answer["accepted"] = self._boundary.accept(probe)
            event = self.ledger.append(events.probe(point, probe.get("job"), probe.get("worker"), data))
        answer["seq"] = event.seq
        after = self.gates.match("after", point, probe)
        if after:
            self._held(after, point, dict(probe, seq=event.seq))
        return answer

    def _answer(self, request: Request) -> tuple[int, dict[str, Any]]:
        """Status and body for one POST: the token first, then the probe's shape, then `handle`."""
        token = request.headers.get(events.TOKEN_HEADER.lower(), "").encode("latin-1")
        if not secrets.compare_digest(token, self.token.encode()):
            return self._refuse(401, f"missing or wrong {events.TOKEN_HEADER}: send the run's {events.ENV_RUN_TOKEN}",
                                "token", request.path)
        point = request.path.removeprefix(events.PROBE_PATH)
        try:
            probe = probe_schema.parse(point, request.body)
        except probe_schema.BadProbe as exc:
            return self._refuse(400, str(exc), exc.kind, request.path)
        return 200, self.handle(point, probe, request.peer_alive)

    def _refuse(self, status: int, error: str, kind: str, path: str) -> tuple[int, dict[str, Any]]:
        """Journal the first refusal of each kind (not every one: a looping worker must not flood the ledger)."""
        with self._commit_lock:
            first = kind not in self._refusals
            self._refusals.add(kind)
        if first:
            self.ledger.append(events.probe_refused(status, error, path[:200]))
        return status, {"error": error}

    def _held(self, gates: list[Gate], point: str, probe: dict[str, Any]) -> None:
        """Journal each gate's match, announce them all, then hold the probe until every one is released."""
        for gate in gates:
            self.ledger.append(events.gate_matched(gate.id, str(gate.spec), point, probe["job"], probe.get("worker"),
                                                   probe.get("pid")))
        for gate in gates:
            gate.announce()
        for gate in gates:
            gate.block()
