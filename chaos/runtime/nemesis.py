"""The nemesis: the one driver of every fault kind. Each fault is journaled (`fault`) before it is
applied, its application recorded with what it touched (`fault.applied`), and a fault that lasts is
healed in `finally` (`fault.healed`), whatever happens meanwhile, Ctrl-C included.

The kinds themselves live in `chaos.faults`; the nemesis only knows their runtime half's shape.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from chaos import events
from chaos.errors import ConfigError, HarnessError
from chaos.faults import KINDS
from chaos.faults.base import FaultWorld, Params
from chaos.ledger import Ledger, LedgerClosed
from chaos.runtime.gates import Gate
from chaos.scenario import Scenario


@dataclass
class ActiveFault:
    """A fault under way: its id, what `fault.applied` recorded, and facts for `fault.healed`."""

    id: str
    applied: Params
    healed: Params = field(default_factory=dict)


class Nemesis:
    """Injects the faults `scenario` declared (the run checked before it started that it can) and no other."""

    def __init__(self, ledger: Ledger, world: FaultWorld, scenario: Scenario) -> None:
        self.ledger = ledger
        self.world = world
        self.scenario = scenario
        self._ids = itertools.count(1)
        self._lasting: dict[str, AbstractContextManager[ActiveFault]] = {}

    def begin(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> ActiveFault:
        """Apply a fault that lasts until `end` (or `close`, at the latest when the scenario ends)."""
        lasting = self.active(kind, target, gate, **params)
        fault = lasting.__enter__()
        self._lasting[fault.id] = lasting
        return fault

    def end(self, fault: ActiveFault) -> None:
        lasting = self._lasting.pop(fault.id, None)
        if lasting is not None:
            lasting.__exit__(None, None, None)

    def close(self) -> None:
        """Heal every fault still in place, the latest first."""
        while self._lasting:
            fault_id = next(reversed(self._lasting))
            self._lasting.pop(fault_id).__exit__(None, None, None)

    def inject(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> Params:
        """Apply a fault that needs no healing (or heal it at once); returns what `fault.applied` recorded."""
        with self.active(kind, target, gate, **params) as fault:
            return fault.applied

    @contextmanager
    def active(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> Iterator[ActiveFault]:
        """Journal, inject, record the application, hand the fault to the caller while it lasts, and heal
        it in `finally` (a kind with a heal is healed even when its injection failed halfway)."""
        if kind not in self.scenario.faults:
            raise ConfigError(f"Scenario {self.scenario.path} injected a {kind} fault, but its FAULTS "
                              f"{self.scenario.faults!r} does not declare it: add {kind!r} to FAULTS, so that a "
                              "run that cannot take it is refused before anything starts.")
        fault_kind = KINDS.get(kind)
        if fault_kind is None or fault_kind.inject is None:
            raise HarnessError(f"fault kind {kind!r} has no runtime half registered in chaos.faults")
        fault_id = f"f{next(self._ids)}"
        self.ledger.append(events.fault(fault_id, kind, target, gate.id if gate else None, params))
        active = ActiveFault(fault_id, {})
        try:
            active.applied = fault_kind.inject(self.world, target, params)
            self.ledger.append(events.fault_applied(fault_id, target, active.applied))
            if fault_kind.settle is not None:
                fault_kind.settle(self.world, target, active.applied)
            yield active
        finally:
            if fault_kind.heal is not None:
                healed = fault_kind.heal(self.world, target, active.applied)
                # An interrupted run closes its ledger while the scenario's thread may still be here: the
                # heal is done, and the run's end has stopped every process, so there is nothing to record.
                with suppress(LedgerClosed):
                    self.ledger.append(events.fault_healed(fault_id, target, {**healed, **active.healed}))

