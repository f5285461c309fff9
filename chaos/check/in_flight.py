"""Claims in flight across a fault: when a claim was made, as far as the ledger proves it.

A claim probe reaches the ledger after the queue committed the claim. Its arrival is the time the checker
uses, but a worker frozen (SIGSTOP) or killed while its claim probe was on its way delivers that probe only
after the fault: read at its arrival, a claim made before the stop looks like a stopped owner taking the
job from the worker that rightfully reclaimed it meanwhile, and a dead owner's claim looks alive.

So a claim is placed earlier than its arrival only when the ledger shows a fault froze or ended its
worker between the two, and then no earlier than what the ledger can vouch for:
- `sent`, the worker's own `time.monotonic()` when it sent the probe (CLOCK_MONOTONIC is system-wide, so
  it is comparable with the ledger's `mono`), never later than the arrival and never earlier than the
  worker's previous probe as committed (its probes are reported in order) or its process's start; ignored for a worker
  under a clock fault, whose clocks are the fault's business;
- a process already reaped sent it before its exit, whatever its stamp says.
Without such a fault, arrival order stands, so a stamp alone can never hide a reclaim from a live owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos.check.history import FaultHistory, RunHistory
from chaos.events import Event
from chaos.faults.base import signalled


@dataclass(frozen=True, slots=True)
class InFlight:
    """A claim that crossed a fault on its worker: when it was made, and what froze or ended it since."""

    at: float  # the latest time the claim can have been made
    since: int  # the last seq before `at`: a fault journaled after it came after the claim
    crossed: list[FaultHistory]  # faults on its worker journaled after `at`, in journal order
    exit: Event | None  # its process's exit, when the process was reaped before the probe arrived


def in_flight(run: RunHistory, event: Event) -> InFlight | None:
    """How a claim crossed a fault on its worker; None when nothing froze or ended it since it was sent."""
    worker = event.worker or "?"
    freezes = run.freezes.get(worker)
    pid = event.data.get("pid")
    exit = run.reaped.get((worker, pid)) if run.reaped else None
    if exit is None and (not freezes or _before(freezes[-1], event)):
        return None  # the common case: nothing froze or ended its worker since it could have been sent
    at = _sent(run, worker, pid, event)
    if exit is not None:
        at = min(at, exit.mono)
    freezes = freezes or []
    crossed = [f for f in freezes if f.journal is not None and (f.journal.mono > at or _killed(f, pid, exit))]
    if not crossed and exit is None:
        return None
    after = [f.seq for f in run.faults.values() if f.journal is not None and f.journal.mono > at]
    after += [e.seq for e in run.backend_restarts if e.mono > at]
    if exit is not None:
        after.append(exit.seq)
    return InFlight(at, min(after, default=event.seq + 1) - 1, crossed, exit)


def _before(fault: FaultHistory, event: Event) -> bool:
    """Was this fault journaled before the probe could have been sent, whatever bounds its stamp gets?"""
    sent = event.data.get("sent")
    earliest = sent if isinstance(sent, (int, float)) and not isinstance(sent, bool) else event.mono
    return fault.journal is None or fault.journal.mono <= min(earliest, event.mono)


def _sent(run: RunHistory, worker: str, pid: Any, event: Event) -> float:
    """The worker's send time, bounded by what the ledger shows; the arrival when it cannot be used."""
    sent = event.data.get("sent")
    if isinstance(sent, bool) or not isinstance(sent, (int, float)) or worker in run.always_excused:
        return event.mono
    floor = run.last_probe.get(event.worker)
    if floor is None:  # its first probe: not before its process started
        floor = next((e.mono for e in reversed(run.starts.get(worker, [])) if e.data.get("pid") == pid), float("-inf"))
    return min(event.mono, max(float(sent), floor))


def _killed(fault: FaultHistory, pid: Any, exit: Event | None) -> bool:
    """Did this fault end the process that sent the claim? Its probe was sent before the signal landed."""
    return exit is not None and pid is not None and pid in signalled(fault)
