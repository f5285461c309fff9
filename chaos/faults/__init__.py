"""Fault kinds, registered by name: each module holds one kind's two halves (see `chaos.faults.base`).

Adding a kind is a module here and its line in BUILT_IN (another distribution adds one through an entry
point in the group `queue_chaos.fault_kinds` naming its FaultKind: `chaos.plugins`). Nothing else names
it: a scenario applies any kind through `ctx.inject`, `ctx.begin` or `ctx.hold_until`, and `chaos
explore` schedules a kind by what it says of itself (chaos.explore.schedule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chaos.faults import backend_restart, clock, container, kill, partition, restart, stop, toxics
from chaos.faults.base import FaultKind
from chaos.plugins import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BUILT_IN: dict[str, FaultKind] = {kind.name: kind for kind in (
    kill.KIND, stop.KIND, restart.KIND, backend_restart.KIND, clock.KIND, partition.KIND, *toxics.KINDS,
    *container.KINDS,
)}


def _plugin_kind(point: EntryPoint) -> FaultKind:
    """An entry point names a FaultKind, called as the entry point is."""
    kind = point.load()
    if not isinstance(kind, FaultKind):
        raise ValueError(f"it names {kind!r}, not a chaos.faults.base.FaultKind (write module:NAME of one)")
    if kind.name != point.name:
        raise ValueError(f"the FaultKind it names is called {kind.name!r}: name the entry point as the kind")
    return kind


KINDS: Registry[FaultKind] = Registry("fault_kinds", "fault kind", lambda: BUILT_IN, _plugin_kind)


def fault_kind(name: str) -> FaultKind:
    """The registered kind; an unknown one (a ledger from elsewhere) does nothing and proves nothing."""
    return KINDS.get(name) or FaultKind(name)
