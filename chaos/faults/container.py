"""Container faults, through the Docker SDK: what signals cannot do.

- pause: freeze every process of a worker's container at once (the cgroup freezer), until the scenario's
  condition holds, then thaw it (always, in `finally`). Unlike a SIGSTOP of the worker's process tree, it
  reaches what left the tree too (a helper the worker daemonised: a heartbeat process). Proven by the
  container's paused state and the pids it froze.
- container_kill: SIGKILL of a worker's container (its init, so every process in it dies, detached or
  not). Proven by the reaped SIGKILL exit of the worker's process.
- disconnect: cut the backend's container off its network until healed: every worker's connections fail
  at once and new ones are refused, while the server runs on. Nobody can recover a job while it lasts, so
  the recovery of the jobs it took starts at its heal. Proven by the container's networks: none while it
  lasted.

A restart of the backend's container is the backend_restart fault on the docker provider; a restart of
a worker's is the restart fault (a new container). The worker faults need a target with an image (a
run is refused before it starts otherwise); disconnect needs the docker provider (refused alike).
"""

from __future__ import annotations

from chaos.backends.base import CONTAINER
from chaos.containers.engine import client as engine_client
from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView


def _pause(world: FaultWorld, target: str, params: Params) -> Params:
    return {"pids": world.pause_container(target, True)}


def _thaw(world: FaultWorld, target: str, applied: Params) -> Params:
    return {"pids": world.pause_container(target, False)}


def _prove_pause(fault: FaultView, run: RunView) -> tuple[bool, str]:
    pids = list(fault.applied.data.get("pids") or []) if fault.applied is not None else []
    if not pids:
        return False, f"{fault.target}'s container held no live process to freeze"
    thawed = f", thawed at {run.at(fault.healed)}" if fault.healed else ", never thawed"
    return True, (f"{fault.target}'s container paused (cgroup freezer): {len(pids)} process(es) frozen, "
                  f"pids {pids}{thawed}")


def _kill(world: FaultWorld, target: str, params: Params) -> Params:
    return {"pids": world.kill_container(target)}


def _reap(world: FaultWorld, target: str, applied: Params) -> None:
    world.reap(target)


def _prove_kill(fault: FaultView, run: RunView) -> tuple[bool, str]:
    pids = list(fault.applied.data.get("pids") or []) if fault.applied is not None else []
    target = fault.target or ""
    exits = [e for e in run.exits.get(target, []) if e.seq > fault.seq and e.data.get("pid") in pids]
    if not any(e.data.get("signal") == "SIGKILL" for e in exits):
        return False, f"no SIGKILL exit of {target}'s process was reaped after its container was killed"
    return True, f"{target}'s container killed: {len(pids)} process(es) ended by SIGKILL, pids {pids}"


def _disconnect(world: FaultWorld, target: str, params: Params) -> Params:
    return {"networks": world.connect_backend(False)}


def _connect(world: FaultWorld, target: str, applied: Params) -> Params:
    return {"networks": world.connect_backend(True)}


def _prove_disconnect(fault: FaultView, run: RunView) -> tuple[bool, str]:
    if fault.applied is None:
        return False, "never applied"
    left = fault.applied.data.get("networks")
    if left:
        return False, f"the backend's container was still on {left} after the disconnect"
    back = f", reconnected to {fault.healed.data.get('networks')}" if fault.healed else ", never reconnected"
    return True, f"the backend's container was on no network while it lasted{back}"


def _engine() -> None:
    """A container fault needs a Docker engine that answers (ConfigError, before anything starts)."""
    engine_client()


PAUSE = FaultKind("pause", "pause {worker}'s container", takes_owner=True, excuses="since_claim", suspends=True,
                  prove=_prove_pause, containers=True, preflight=_engine, inject=_pause, heal=_thaw)
CONTAINER_KILL = FaultKind("container_kill", "kill {worker}'s container", takes_owner=True, ends_executions=True,
                           excuses="since_claim", prove=_prove_kill, containers=True, preflight=_engine, inject=_kill,
                           settle=_reap)
DISCONNECT = FaultKind("disconnect", "cut the backend's container off its network", reach="everyone",
                       takes_owner=True, excuses="since_claim", recovery_from="healed", prove=_prove_disconnect,
                       needs=frozenset({CONTAINER}), preflight=_engine, inject=_disconnect, heal=_connect)
KINDS = (PAUSE, CONTAINER_KILL, DISCONNECT)
