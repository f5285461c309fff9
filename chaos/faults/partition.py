"""partition: cut one worker off from its backend at its proxy, until healed. Mode `disable` closes the
proxy (its connections close at once, new ones are refused); mode `blackhole` adds a Toxiproxy `timeout`
of 0 in both directions (its connections stay open and every byte is swallowed; removing it closes them).

A partitioned owner may lose its job (recovery starts when the partition is applied), and a reclaim from
it is never premature. Proven only when the ledger shows the worker's traffic was cut while the
partition lasted: connections the proxy closed or bytes it held (the embedded server reports both), or
else a failed lease extension of the worker, or none succeeding, while it held a job.
"""

from __future__ import annotations

from chaos import events
from chaos.errors import ConfigError
from chaos.events import Event
from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView

MODES = ("disable", "blackhole")
HOLES = ("chaos-partition-upstream", "chaos-partition-downstream")


def inject(world: FaultWorld, target: str, params: Params) -> Params:
    mode = params.get("mode", "disable")
    if mode not in MODES:
        raise ConfigError(f"partition mode {mode!r}: expected one of {', '.join(MODES)}.")
    link = world.network(target)
    if mode == "disable":
        link.enabled(False)
    else:
        for name, stream in zip(HOLES, ("upstream", "downstream"), strict=True):
            link.add_toxic(name, "timeout", stream, {"timeout": 0})
    return {"mode": mode, "proxy": link.proxy}


def heal(world: FaultWorld, target: str, applied: Params) -> Params:
    link = world.network(target)
    if applied.get("mode") == "blackhole":
        for name in HOLES:
            link.remove_toxic(name)
    else:
        link.enabled(True)
    return {"proxy": link.proxy}


def watch_probe(fault: FaultView, event: Event) -> None:
    """Count the worker's lease extensions while the partition lasts: failed ones, and successful ones."""
    if event.kind != events.PROBE_HEARTBEAT or fault.applied is None or fault.healed is not None:
        return
    key = "extended" if event.data.get("ok") else "failed"
    fault.observed[key] = fault.observed.get(key, 0) + 1


def prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    applied, target = fault.applied, fault.target or "?"
    if applied is None:
        return False, "never applied"
    until = fault.healed.seq if fault.healed is not None else None
    seen = [e for e in run.context.get(target, []) if e.kind in (events.NETWORK_CUT, events.NETWORK_HELD)
            and e.seq > fault.seq and (until is None or e.seq <= until)]  # a disable cuts before it is recorded
    closed = sum(e.data.get("connections", 0) for e in seen if e.kind == events.NETWORK_CUT)
    held = sum(e.data.get("bytes", 0) for e in seen if e.kind == events.NETWORK_HELD)
    mode = applied.data.get("mode", "?")
    if closed or held:
        what = f"{closed} connection(s) closed" if closed else f"{held} byte(s) held"
        return True, f"{target} partitioned ({mode}): its proxy cut its traffic, {what}"
    failed, extended = fault.observed.get("failed", 0), fault.observed.get("extended", 0)
    if failed:
        return True, f"{target} partitioned ({mode}): {failed} lease extension(s) failed while it lasted"
    if fault.victims and not extended:
        return True, f"{target} partitioned ({mode}): no lease extension of the job it held succeeded while it lasted"
    return False, (f"nothing shows {target}'s traffic was cut while the partition lasted: no connection closed, no "
                   f"byte held, no extension failed ({extended} succeeded)")


KIND = FaultKind("partition", "partition {worker} from the backend", "{who} was cut off from the server ({mode})",
                 "{who}'s link to the server was restored", takes_owner=True, excuses="since_claim",
                 prove=prove, watch_probe=watch_probe, network=True, inject=inject, heal=heal)
