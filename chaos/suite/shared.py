"""Servers a suite shares between runs: one per backend kind and suite worker, started on first use, for
the cells that need no control of it (no server fault, no server setting of their own); each run then
gets its own namespace on it through the external provider, as on a user's server.

Only RabbitMQ is shared: a node boots in about 7 s, while PostgreSQL (0.9 s), Redis and beanstalkd
(0.03 s) boot faster than sharing would save, and keep the observers a local server allows
(benchmarks/backend_lifecycle.py).

Each node keeps a ledger of its own in its directory, as a run does (who started it, where, and what its
backend journaled before its data existed): a suite killed outright leaves a node's data that `chaos clean
--runs-dir <out>` then finds, proves the suite's and removes, as a killed run's.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime
from pathlib import Path

import psutil

from chaos import events
from chaos.backends import rabbitmq
from chaos.backends.base import BackendSettings
from chaos.backends.rabbitmq.local import LocalRabbitMQ
from chaos.backends.registry import server_options
from chaos.discovery import find_scenario, find_target
from chaos.errors import HarnessError
from chaos.faults import KINDS
from chaos.ledger import Ledger
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
        self._ledgers: list[Ledger] = []
        self._closed = False
        self._lock = threading.Lock()

    def env(self, slot: int) -> dict[str, str]:
        """The environment that points the external provider at the slot's node (started if need be)."""
        with self._lock:
            server = self._servers.get(slot)
        if server is None:
            server = self._open(self.root / f"{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}-rabbitmq-{slot}",
                                f"shared-{slot}")
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
            ledgers, self._ledgers = self._ledgers, []
        try:
            for server in servers:
                server.close()
        finally:
            for ledger in ledgers:
                ledger.append(events.run_end("ok", "the suite closed its shared node"))
                ledger.close()

    def _open(self, root: Path, run_id: str) -> LocalRabbitMQ:
        """A node in a fresh dir laid out as a run dir's (its ledger, the node's data under `rabbitmq/`),
        its ledger saying who started it where, and what its backend journals."""
        root.mkdir(parents=True)
        ledger = Ledger(root / "ledger.sqlite")
        with self._lock:
            self._ledgers.append(ledger)
        ledger.append(events.run_start(target=run_id, scenario="", pid=os.getpid(),
                                       pid_create_time=psutil.Process().create_time(), host=socket.gethostname(),
                                       backend_kind=LocalRabbitMQ.kind))
        return LocalRabbitMQ.open(BackendSettings(root / LocalRabbitMQ.kind, run_id, on_event=ledger.append,
                                                  options={"management": "on"}))
