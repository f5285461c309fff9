"""clock: a worker started with its wall clock shifted (libfaketime; monotonic clocks stay real). A
reclaim from a skewed owner is never premature (the skew is the point); proven when the worker's probes
carry the shifted clock."""

from __future__ import annotations

import glob

from chaos.errors import ConfigError
from chaos.events import Event
from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView

CLOCK_TOLERANCE_S = 5.0
FAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                  "/usr/local/lib/faketime/libfaketime.so.1")


def watch_probe(fault: FaultView, event: Event) -> None:
    """Each probe carries its worker's wall clock: its skew against the controller's shows the shift."""
    clock = event.data.get("clock")
    if isinstance(clock, bool) or not isinstance(clock, (int, float)):
        return
    skew = clock - event.wall
    fault.observed["skew"] = skew
    if abs(skew - (fault.data.get("offset_s") or 0.0)) < CLOCK_TOLERANCE_S:
        fault.observed["seen"] = True


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    target = fault.target
    offset = fault.data.get("offset_s") or 0.0
    if fault.observed.get("seen"):
        return True, f"{target} ran with its wall clock shifted by {offset:+}s (seen on its probes)"
    skew = fault.observed.get("skew")
    if skew is None:
        return False, f"no probe from {target} carried its clock, so the {offset:+}s shift was never seen"
    return False, (f"{target}'s probes show a clock skew of {skew:+.3f}s, not the {offset:+}s offset: the shifted "
                   "clock did not take")


def faketime_env(offset_s: float) -> dict[str, str]:
    """Environment that starts a process with its wall clock shifted by `offset_s` (libfaketime)."""
    found = [path for pattern in FAKETIME_GLOBS for path in sorted(glob.glob(pattern))]
    if not found:
        raise ConfigError("Clock skew needs libfaketime (libfaketime.so.1), which was not found under "
                          f"{', '.join(FAKETIME_GLOBS)}. Install it (Debian: apt-get install libfaketime, "
                          "or run ci/setup.sh).")
    return {"LD_PRELOAD": found[0], "FAKETIME": f"{offset_s:+.0f}s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_NO_CACHE": "1"}


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    offset = float(params["offset_s"])
    return {"pids": [world.start_worker(target, faketime_env(offset))], "offset_s": offset}


def preflight() -> None:
    faketime_env(0.0)


KIND = FaultKind("clock", "start {worker} with its wall clock shifted",
                 "{who} ran with its clock shifted by {offset_s} s", excuses="always", prove=prove,
                 watch_probe=watch_probe, inject=inject, preflight=preflight)
