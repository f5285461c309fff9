"""The local memq provider: the suite starts `python -m chaos_plugin_memq.server` on a free port, as it
starts its own servers (chaos.backends.local_server), so the run may restart or kill it."""

from __future__ import annotations

import sys
import urllib.request
from typing import ClassVar

from chaos.backends.local_server import HOST, LocalServer


class LocalMemq(LocalServer):
    kind: ClassVar[str] = "memq"
    name: ClassVar[str] = "memq"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "chaos_plugin_memq.server", "--port", str(self.port)]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.port}/snapshot", timeout=1.0) as reply:
                return int(reply.status) == 200
        except OSError:  # refused while it starts
            return False

    def url_at(self, host: str, port: int) -> str:
        return f"http://{host}:{port}"
