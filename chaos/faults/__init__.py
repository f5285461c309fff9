"""Fault kinds, registered by name: each module holds one kind's two halves (see `chaos.faults.base`).
Adding a kind is a module here, its line below, and a verb on the scenario context."""

from chaos.faults import backend_restart, clock, container, kill, partition, restart, stop, toxics
from chaos.faults.base import FaultKind

KINDS: dict[str, FaultKind] = {kind.name: kind for kind in (
    kill.KIND, stop.KIND, restart.KIND, backend_restart.KIND, clock.KIND, partition.KIND, *toxics.KINDS,
    *container.KINDS,
)}


def fault_kind(name: str) -> FaultKind:
    """The registered kind; an unknown one (a ledger from elsewhere) does nothing and proves nothing."""
    return KINDS.get(name) or FaultKind(name)
