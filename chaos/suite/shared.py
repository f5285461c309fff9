"""Servers a suite shares between runs: one per backend kind and suite worker, started on first use, for
the cells that need no control of it (no server fault, no server setting of their own); each run then
gets its own namespace on it through the external provider, as on a user's server.

Only RabbitMQ is shared: a node boots in about 7 s, while PostgreSQL (0.9 s), Redis and beanstalkd
(0.03 s) boot faster than sharing would save, and keep the observers a local server allows
(benchmarks/backend_lifecycle.py).
"""

from __future__ import annotations

import threading
from pathlib import Path

from chaos.backends import rabbitmq
from chaos.backends.base import BackendSettings
from chaos.backends.rabbitmq.local import LocalRabbitMQ
from chaos.backends.registry import server_options
from chaos.discovery import find_scenario, find_target
from chaos.errors import HarnessError
from chaos.faults import KINDS
from chaos.suite.cell import Cell

SHARED_KINDS = ("rabbitmq",)


def shareable(cell: Cell) -> bool:
    """A cell whose run needs no server of its own: a kind the suite shares, no fault that needs control of
    the server, and no server setting of its own (none in its parameters, none but the defaults in its
    target.toml's [server])."""
    target = find_target(cell.target)
    if target.backend not in SHARED_KINDS or cell.backend not in (None, "local"):
        return False
    settings = server_options(target.backend)
    own = {name: value for name, value in target.server.items() if str(value) != str(settings[name].default)}
    return (not own and not any(param.partition("=")[0] in settings for param in cell.params)
            and not any(KINDS[kind].needs for kind in find_scenario(cell.scenario).faults))


class SharedServers:
    """The suite's shared RabbitMQ nodes, one per worker slot (a slot runs one cell at a time, so a node
    serves one run at a time); `env` points a run at its slot's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._servers: dict[int, LocalRabbitMQ] = {}
        self._closed = False
        self._lock = threading.Lock()

    def env(self, slot: int) -> dict[str, str]:
        """The environment that points the external provider at the slot's node (started if need be)."""
        with self._lock:
            server = self._servers.get(slot)
        if server is None:
            server = LocalRabbitMQ.open(BackendSettings(self.root / f"rabbitmq-{slot}", f"shared-{slot}",
                                                        options={"management": "on"}))
            with self._lock:
                closed, self._servers[slot] = self._closed, server
            if closed:  # the suite stopped while this node booted: nothing will close it but us
                self.close()
                raise HarnessError("the suite was stopped while a shared RabbitMQ node started")
        return {rabbitmq.ENV_URL: server.endpoint.url.rpartition("/")[0] + "/",
                rabbitmq.ENV_API_URL: str(server.api_url)}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.close()
