"""stop: SIGSTOP of a worker's process tree until the scenario's condition holds, then SIGCONT (always,
in `finally`). A stopped owner keeps its executions (it resumes and goes on) but its jobs may be taken;
proven by the pids that received SIGSTOP."""

from __future__ import annotations

import signal

from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView, signalled


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    pids = signalled(fault)
    if not pids:
        return False, "no live process of the target received the signal"
    resumed = f", resumed by SIGCONT at {run.at(fault.healed)}" if fault.healed else ", never resumed"
    return True, f"{fault.target} stopped by SIGSTOP (pids {pids}){resumed}"


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    return {"pids": world.signal(target, signal.SIGSTOP)}


def heal(world: FaultWorld, target: str, applied: Params) -> Params:
    return {"pids": world.signal(target, signal.SIGCONT)}


KIND = FaultKind("stop", "SIGSTOP {worker}", "{who} was stopped (SIGSTOP){pids}", "{who} was resumed (SIGCONT)",
                 takes_owner=True, excuses="since_claim", suspends=True, prove=prove,
                 inject=inject, heal=heal)
