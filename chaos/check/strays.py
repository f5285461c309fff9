"""Probes that belong to no execution: an effect, heartbeat, ack or abandon naming a (worker, token) that no
claim of its job by that worker opened.

The checker matches each such probe to its claim by (worker, token); one whose token matches none would
be pinned on the worker's latest execution of the job, or on nothing, and the run judged on a guess: an
abandon carrying a wrong token once made a run inconclusive with "the ack or abandon did not happen"
although one had arrived. So a stray probe is the target's harness error, not a verdict on the queue.
The claims are looked up over the whole ledger, so a claim reported after the probe (a batch picker that
reports its claims late) still opens its token. A probe without a token is matched by its worker alone
and is never stray; under lease_scope = worker a heartbeat is its worker's, whatever job and token it
names, so heartbeats are not held to their token there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chaos import events
from chaos.events import Event

_TOKENED = (events.PROBE_EFFECT, events.PROBE_HEARTBEAT, events.PROBE_ACK, events.PROBE_ABANDON)


@dataclass(frozen=True)
class Stray:
    """A probe no claim opened, with the tokens the same worker's claims of the job did open."""

    probe: Event
    opened: tuple[str, ...]

    def describe(self) -> str:
        probe = self.probe
        point = probe.kind.removeprefix(events.PROBE_PREFIX)
        opened = (f"{probe.worker}'s claims of {probe.job} opened the token(s) {', '.join(self.opened)}"
                  if self.opened else f"{probe.worker} never claimed {probe.job}")
        return (f"{point} of {probe.job} by {probe.worker} (seq {probe.seq}) carries the token "
                f"{probe.data.get('token')!r}, which no claim opened ({opened})")


def strays(ledger: Iterable[Event], worker_leases: bool) -> list[Stray]:
    """Every probe, in ledger order, whose (worker, token) no claim of its job opened. Tokens compare as
    text, as the queue's record and the control's answers do (a claim's 7 and an ack's "7" match)."""
    opened: dict[tuple[str | None, str | None], list[str]] = {}  # (job, worker) -> its claims' tokens
    tokened: list[Event] = []
    for event in ledger:
        if event.kind == events.PROBE_CLAIM:
            opened.setdefault((event.job, event.worker), []).append(str(event.data.get("token")))
        elif (event.kind in _TOKENED and event.data.get("token") is not None
              and not (worker_leases and event.kind == events.PROBE_HEARTBEAT)):
            tokened.append(event)
    found = []
    for event in tokened:
        tokens = opened.get((event.job, event.worker), [])
        if str(event.data["token"]) not in tokens:
            found.append(Stray(event, tuple(repr(token) for token in dict.fromkeys(tokens))))
    return found
