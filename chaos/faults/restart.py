"""restart: SIGKILL of a worker's or reconciler's tree, then the same command started again under the
same name. Proven by the reaped SIGKILL exit followed by the new process's start."""

from __future__ import annotations

from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    target = fault.target or ""
    killed = next((e for e in run.exits.get(target, [])
                   if e.seq > fault.seq and e.data.get("signal") == "SIGKILL"), None)
    if killed is None:
        return False, f"no SIGKILL exit of {target} was reaped after the fault"
    started = next((e for e in run.starts.get(target, []) if e.seq > killed.seq), None)
    if started is None:
        return False, f"{target} was killed (pid {killed.data.get('pid')}) but never started again"
    return True, (f"{target} killed by SIGKILL (pid {killed.data.get('pid')}) and started again "
                  f"(pid {started.data.get('pid')})")


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    pids, new_pid = world.restart_process(target)
    return {"pids": pids, "new_pid": new_pid}


KIND = FaultKind("restart", "restart {worker}", "{who} was killed and started again (new pid {new_pid})",
                 takes_owner=True, ends_executions=True, restarts=True,
                 excuses="since_claim", prove=prove, inject=inject)
