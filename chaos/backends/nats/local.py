"""The local NATS provider: a private `nats-server` with JetStream, on 127.0.0.1 and free ports, its store
(-sd) in the run dir, so a restart keeps exactly what the streams' storage keeps (a file stream its
messages and its consumer's state, a memory stream nothing at all)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, ClassVar

from chaos.backends.local_server import HOST, LocalServer, require_binary
from chaos.worker.nats import stream_for


def healthy(host: str, monitor_port: int) -> bool:
    """Ready once the monitoring port's health check passes: it fails until JetStream has recovered every
    stream of its store (after a restart)."""
    try:
        with urllib.request.urlopen(f"http://{host}:{monitor_port}/healthz", timeout=2) as answer:
            return bool(json.loads(answer.read()).get("status") == "ok")
    except (urllib.error.URLError, OSError, ValueError):
        return False


class LocalNats(LocalServer):
    kind: ClassVar[str] = "nats"
    name: ClassVar[str] = "NATS"

    namespace_for = staticmethod(stream_for)  # the server is the run's own, but its clients need a stream name

    def port_names(self) -> tuple[str, ...]:
        return ("client", "monitor")

    def argv(self) -> list[str]:
        return [require_binary("nats-server", "nats-server", "NATS"), "-js", "-sd", str(self.data_dir),
                "-a", HOST, "-p", str(self.port), "-m", str(self.ports["monitor"]), "-n", self.marker]

    def ready(self) -> bool:
        return healthy(HOST, self.ports["monitor"])

    def url_at(self, host: str, port: int) -> str:
        return f"nats://{host}:{port}"

    def describe(self) -> dict[str, Any]:
        return {"namespace": self.namespace}
