"""Network degradations of one worker's link to its backend, each a Toxiproxy toxic on its proxy, removed
when healed: `latency` (ms each way, with jitter), `bandwidth` (KB/s each way), `reset` (the worker's next
write to its backend is answered by an RST after timeout_ms) and `slice` (its traffic cut into small
pieces, with a delay between them).

A degraded worker keeps its jobs, but a reclaim from it is not premature (a slow link can cost a lease).
Proven when the toxics were in place (the fault's applied record lists them) while the worker was at work
(it reported a probe meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.events import Event
from chaos.faults.base import FaultKind, FaultView, FaultWorld, Params, RunView

BOTH = ("upstream", "downstream")
Toxics = Callable[[Params], list[tuple[str, str, dict[str, int]]]]  # params -> [(toxic type, stream, attributes)]


def _int(params: Params, key: str, default: int = 0) -> int:
    value: Any = params.get(key, default)
    return int(value)


def _latency(params: Params) -> list[tuple[str, str, dict[str, int]]]:
    attributes = {"latency": _int(params, "latency_ms"), "jitter": _int(params, "jitter_ms")}
    return [("latency", stream, attributes) for stream in BOTH]


def _bandwidth(params: Params) -> list[tuple[str, str, dict[str, int]]]:
    return [("bandwidth", stream, {"rate": _int(params, "rate_kb")}) for stream in BOTH]


def _reset(params: Params) -> list[tuple[str, str, dict[str, int]]]:
    return [("reset_peer", "upstream", {"timeout": _int(params, "timeout_ms")})]


def _slice(params: Params) -> list[tuple[str, str, dict[str, int]]]:
    attributes = {"average_size": _int(params, "average_size", 16), "size_variation": _int(params, "size_variation", 8),
                  "delay": _int(params, "delay_us", 1000)}
    return [("slicer", stream, attributes) for stream in BOTH]


def _kind(name: str, action: str, toxics: Toxics) -> FaultKind:
    def inject(world: FaultWorld, target: str, params: Params) -> Params:
        link = world.network(target)
        names = []
        for kind, stream, attributes in toxics(params):
            toxic = f"chaos-{name}-{stream}"
            link.add_toxic(toxic, kind, stream, attributes, float(params.get("toxicity", 1.0)))
            names.append(toxic)
        return {"proxy": link.proxy, "toxics": names}

    def heal(world: FaultWorld, target: str, applied: Params) -> Params:
        link = world.network(target)
        for toxic in applied.get("toxics", []):
            link.remove_toxic(toxic)
        return {"proxy": link.proxy, "removed": list(applied.get("toxics", []))}

    return FaultKind(name, action, excuses="since_claim", prove=_prove, watch_probe=_watch, network=True, inject=inject,
                     heal=heal)


def _watch(fault: FaultView, event: Event) -> None:
    if fault.applied is not None and fault.healed is None:
        fault.observed["probes"] = fault.observed.get("probes", 0) + 1


def _prove(fault: FaultView, run: RunView) -> tuple[bool, str]:
    toxics = fault.applied.data.get("toxics") if fault.applied is not None else None
    if not toxics:
        return False, "no toxic was added to the worker's proxy"
    probes = fault.observed.get("probes", 0)
    if not probes:
        return False, f"{fault.target} reported nothing while {', '.join(toxics)} were in place: it was not at work"
    return True, f"{fault.target}'s link degraded by {', '.join(toxics)} while it reported {probes} probe(s)"


KINDS = (_kind("latency", "delay {worker}'s traffic to the backend", _latency),
         _kind("bandwidth", "limit the bandwidth of {worker}'s link to the backend", _bandwidth),
         _kind("reset", "reset {worker}'s connection to the backend", _reset),
         _kind("slice", "slice {worker}'s traffic to the backend into small pieces", _slice))
