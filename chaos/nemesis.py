"""The nemesis: injects faults. Every fault is journaled before it is applied, and healed in `finally`."""

from __future__ import annotations

import itertools
import signal
from typing import Any

from chaos.errors import HarnessError
from chaos.gates import Gate
from chaos.ledger import Ledger
from chaos.supervisor import Scope, Supervisor


class Nemesis:
    def __init__(self, ledger: Ledger, supervisor: Supervisor) -> None:
        self.ledger = ledger
        self.supervisor = supervisor
        self._ids = itertools.count(1)

    def _journal(self, kind: str, target: str, gate: Gate | None, **extra: Any) -> str:
        fault_id = f"f{next(self._ids)}"
        self.ledger.append("fault", "nemesis", worker=target,
                           data={"id": fault_id, "kind": kind, "target": target,
                                 "gate": gate.id if gate else None, **extra})
        return fault_id

    def kill(self, worker: str, scope: Scope = "tree", gate: Gate | None = None) -> list[int]:
        """SIGKILL a worker (or its whole tree) and wait until its exit is reaped into the ledger."""
        fault_id = self._journal("kill", worker, gate, scope=scope)
        pids = self.supervisor.kill(worker, scope)
        self.ledger.append("fault.applied", "nemesis", worker=worker, data={"id": fault_id, "pids": pids})
        if self.supervisor.wait_exit(worker, 10.0) is None and scope == "tree":
            raise HarnessError(f"worker {worker} was sent SIGKILL but was not reaped within 10s")
        return pids

    def signal(self, worker: str, sig: signal.Signals, scope: Scope = "tree") -> list[int]:
        return self.supervisor.signal(worker, sig, scope)
