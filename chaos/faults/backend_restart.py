"""backend_restart: the backend server stopped (immediate: crash-like; fast: clean) and started again on
the same data and address while workers keep running. Every owner may lose its job; proven by the
backend's own `backend.restart` report. Needs a backend the suite controls (not an external one)."""

from __future__ import annotations

import time

from chaos.backends.base import RESTART
from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    restart = next((e for e in run.backend_restarts if e.seq > fault.seq), None)
    if restart is None:
        return False, "no backend.restart event followed the fault"
    return True, (f"backend restarted ({restart.data.get('mode', '?')}, pid {restart.data.get('old_pid')} -> "
                  f"{restart.data.get('new_pid')})")


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    mode = str(params.get("mode", "immediate"))
    began = time.monotonic()
    world.restart_backend(mode)
    return {"mode": mode, "down_s": round(time.monotonic() - began, 4)}


KIND = FaultKind("backend_restart", "restart the backend server",
                 "the server was restarted ({mode}, down {down_s} s)", reach="everyone", takes_owner=True,
                 restarts=True, excuses="since_claim", prove=prove, needs=frozenset({RESTART}), inject=inject)
