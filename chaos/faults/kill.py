"""kill: SIGKILL of a worker's process tree (or only the process that sent a held probe). Its
executions end and its jobs must be recovered; proven by the reaped SIGKILL exit of a signalled pid."""

from __future__ import annotations

import signal

from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView, signalled


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    pids = signalled(fault)
    if not pids:
        return False, "no live process of the target received the signal"
    target = fault.target or ""
    # The exit may be reaped before `fault.applied` is written: it only has to follow the journal entry.
    exits = [e for e in run.exits.get(target, []) if e.seq > fault.seq and e.data.get("pid") in pids]
    if not any(e.data.get("signal") == "SIGKILL" for e in exits):
        return False, f"no SIGKILL exit of a signalled process of {target} was reaped after the fault"
    return True, f"{target} killed by SIGKILL (pids {pids})"


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    return {"pids": world.signal(target, signal.SIGKILL, params.get("scope", "tree"), params.get("pid"))}


def settle(world: FaultWorld, target: str, applied: Params) -> None:
    world.reap(target, applied["pids"])


KIND = FaultKind("kill", "SIGKILL {worker}", "{who} was killed (SIGKILL){pids}", takes_owner=True,
                 ends_executions=True, excuses="since_claim", prove=prove, inject=inject, settle=settle)
