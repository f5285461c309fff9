"""freeze: SIGSTOP a worker's tree while the scenario holds it, SIGCONT at the heal. The frozen worker
keeps its job (the queue has no lease to take it by); proven by the pids that received SIGSTOP."""

from __future__ import annotations

import signal
from typing import Any

from chaos.faults.base import FaultKind, FaultWorld, Params, signalled


def prove(fault: Any, run: Any) -> tuple[bool, str]:
    pids = signalled(fault)
    if not pids:
        return False, "no live process of the target received SIGSTOP"
    return True, f"{fault.target} frozen by SIGSTOP (pids {pids})"


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    return {"pids": world.signal(target, signal.SIGSTOP)}


def heal(world: FaultWorld, target: str, applied: Params) -> Params:
    return {"pids": world.signal(target, signal.SIGCONT)}


KIND = FaultKind("freeze", "freeze {worker} (SIGSTOP, then SIGCONT)", excuses="since_claim", suspends=True,
                 prove=prove, inject=inject, heal=heal)
