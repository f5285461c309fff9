"""The nemesis: injects faults. Every fault is journaled before it is applied, and healed in `finally`.

Each method writes `fault` (what is about to happen, and at which gate), applies it, then writes
`fault.applied` with what it touched; a fault that ends (a stop resumed) also writes `fault.healed`.
"""

from __future__ import annotations

import glob
import itertools
import signal
import time
from collections.abc import Callable
from typing import Any

from chaos.errors import ConfigError
from chaos.gates import Gate
from chaos.ledger import Ledger
from chaos.supervisor import Scope, Supervisor

BACKEND = "backend"
FAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                  "/usr/local/lib/faketime/libfaketime.so.1")


def faketime_env(offset_s: float) -> dict[str, str]:
    """Environment that starts a process with its wall clock shifted by `offset_s` (libfaketime).

    Monotonic clocks stay real, so the worker's timers and timeouts still behave.
    """
    found = [path for pattern in FAKETIME_GLOBS for path in sorted(glob.glob(pattern))]
    if not found:
        raise ConfigError("Clock skew needs libfaketime (libfaketime.so.1), which was not found under "
                          f"{', '.join(FAKETIME_GLOBS)}. Install it (Debian: apt-get install libfaketime, "
                          "or run ci/setup.sh).")
    return {"LD_PRELOAD": found[0], "FAKETIME": f"{offset_s:+.0f}s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_NO_CACHE": "1"}


class Nemesis:
    def __init__(self, ledger: Ledger, supervisor: Supervisor, backend: Any) -> None:
        self.ledger = ledger
        self.supervisor = supervisor
        self.backend = backend
        self._ids = itertools.count(1)

    def journal(self, kind: str, target: str, gate: Gate | None, **extra: Any) -> str:
        fault_id = f"f{next(self._ids)}"
        self.ledger.append("fault", "nemesis", worker=target,
                           data={"id": fault_id, "kind": kind, "target": target,
                                 "gate": gate.id if gate else None, **extra})
        return fault_id

    def applied(self, fault_id: str, target: str, **data: Any) -> None:
        self.ledger.append("fault.applied", "nemesis", worker=target, data={"id": fault_id, **data})

    def kill(self, worker: str, scope: Scope = "tree", gate: Gate | None = None) -> list[int]:
        """SIGKILL a worker (or only the process that runs the handler) and wait until it is reaped."""
        fault_id = self.journal("kill", worker, gate, scope=scope)
        pids = self.supervisor.kill(worker, scope)
        self.applied(fault_id, worker, pids=pids)
        self.supervisor.reap(worker)
        return pids

    def stop(self, worker: str, until: Callable[[float], bool], max_s: float, gate: Gate | None = None,
             while_stopped: Callable[[], None] | None = None) -> bool:
        """SIGSTOP a worker's tree until `until(remaining_s)` holds (or `max_s` passes), then SIGCONT.

        The SIGCONT is in `finally`: a stopped process is never left behind, whatever happens.
        Returns whether the condition held.
        """
        fault_id = self.journal("stop", worker, gate, max_s=max_s)
        held = False
        try:
            pids = self.supervisor.signal(worker, signal.SIGSTOP)
            self.applied(fault_id, worker, pids=pids)
            if while_stopped is not None:
                while_stopped()
            held = until(max_s)
        finally:
            resumed = self.supervisor.signal(worker, signal.SIGCONT)
            self.ledger.append("fault.healed", "nemesis", worker=worker,
                               data={"id": fault_id, "pids": resumed, "condition_held": held})
        return held

    def restart(self, name: str, gate: Gate | None = None) -> int:
        """SIGKILL a worker or reconciler tree and start it again under the same name; returns the new pid."""
        fault_id = self.journal("restart", name, gate)
        pids, managed = self.supervisor.restart(name)
        self.applied(fault_id, name, pids=pids, new_pid=managed.pid)
        return managed.pid

    def restart_backend(self, mode: str = "immediate", gate: Gate | None = None) -> None:
        """Restart the backend server itself (same data, same port) while workers keep running."""
        fault_id = self.journal("backend_restart", BACKEND, gate, mode=mode)
        began = time.monotonic()
        self.backend.restart(mode)
        self.applied(fault_id, BACKEND, mode=mode, down_s=round(time.monotonic() - began, 4))
