"""Gates: hold a worker at an exact point of a job's life while the controller injects a fault.

A gate is armed on `before:<point>` or `after:<point>` with filters; the nth matching probe is held
(its HTTP answer withheld) until released. So a fault lands in an exact window, not a timed guess.
`nth` counts every probe that passes the gate's filters, whether or not another gate holds it too: two
gates on `after:claim job=x`, with nth=1 and nth=2, hold the job's first and second claims. A probe
several gates take is held until every one of them is released.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from chaos.errors import ConfigError, NotExercised
from chaos.events import POINTS

_ids = itertools.count(1)


@dataclass(frozen=True)
class GateSpec:
    when: str
    point: str
    job: str | None = None
    worker: str | None = None
    nth: int = 1

    @classmethod
    def parse(cls, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> GateSpec:
        when, _, point = spec.partition(":")
        if when not in ("before", "after") or point not in POINTS or nth < 1:
            raise ConfigError(
                f"Bad gate {spec!r} (nth={nth}): expected 'before:<point>' or 'after:<point>' with a point "
                f"among {', '.join(POINTS)} and nth >= 1."
            )
        return cls(when, point, job, worker, nth)

    def filters(self, when: str, point: str, probe: dict[str, Any]) -> bool:
        return (
            when == self.when
            and point == self.point
            and (self.job is None or probe.get("job") == self.job)
            and (self.worker is None or probe.get("worker") == self.worker)
        )

    def __str__(self) -> str:
        parts = [f"{self.when}:{self.point}"]
        parts += [f"{k}={v}" for k, v in (("job", self.job), ("worker", self.worker)) if v is not None]
        return " ".join(parts + ([f"nth={self.nth}"] if self.nth != 1 else []))


class Gate:
    """One armed gate; the sink's request thread blocks in `hold` until `release`."""

    def __init__(self, spec: GateSpec) -> None:
        self.id = f"g{next(_ids)}"
        self.spec = spec
        self.seen = 0
        self.probe: dict[str, Any] | None = None
        self._taken = False
        self._matched = threading.Event()
        self._released = threading.Event()

    @property
    def matched(self) -> bool:
        return self._matched.is_set()

    def offer(self, when: str, point: str, probe: dict[str, Any]) -> bool:
        """Count a candidate probe; true when it is the one this gate holds. Caller holds the table lock."""
        if self._taken or not self.spec.filters(when, point, probe):
            return False
        self.seen += 1
        if self.seen < self.spec.nth:
            return False
        self._taken = True
        self.probe = dict(probe, point=point)
        return True

    def announce(self) -> None:
        """Make the match visible to waiters (only after the sink journaled it, so the ledger leads)."""
        self._matched.set()

    def block(self) -> None:
        self._released.wait()

    def poll(self, timeout: float) -> bool:
        """Whether it matched within `timeout` (it never raises)."""
        return self._matched.wait(timeout)

    def wait(self, timeout: float) -> dict[str, Any]:
        """Wait for the match; raises NotExercised (an inconclusive run) when it never comes."""
        if not self._matched.wait(timeout):
            raise NotExercised(f"gate {self.spec} never matched within {timeout:.1f}s: fault not exercised")
        assert self.probe is not None
        return self.probe

    def release(self) -> None:
        self._released.set()

    @property
    def released(self) -> bool:
        return self._released.is_set()


class GateTable:
    """The armed gates of one sink; matching is atomic, so each gate holds exactly one probe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: list[Gate] = []

    def add(self, gate: Gate) -> None:
        with self._lock:
            self._gates.append(gate)

    def match(self, when: str, point: str, probe: dict[str, Any]) -> list[Gate]:
        """Every gate that holds this probe (each gate counts it, whichever others take it)."""
        with self._lock:
            return [gate for gate in self._gates if gate.offer(when, point, probe)]

    def release_all(self) -> None:
        with self._lock:
            for gate in self._gates:
                gate.release()
