"""Execution labels a reader can tell apart: `w1#2` is worker w1's second claim of the run (of any job).

A token is 32 hex digits, and two executions of one worker cut to the same 8 look identical; a label is
short, stable (it follows the ledger's order of claim reports, so every report of one run names an
execution alike) and says whose claim it was. The checker's messages, the witness, the text reports and
the charts all take their labels from here; the token stays in verdict.json and one click away on the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chaos import events
from chaos.events import Event

Key = tuple[str, str, str | None]  # (job, worker, token): one execution, as probes name it


def key_of(job: str, worker: str, token: Any) -> Key:
    return (job, worker, None if token is None else str(token))


class Labels:
    """Each execution's label, handed out in the order its claim reached the ledger."""

    __slots__ = ("_claims", "_by_key")

    def __init__(self) -> None:
        self._claims: dict[str, int] = {}  # worker -> how many claims it has made so far
        self._by_key: dict[Key, str] = {}

    def claim(self, job: str, worker: str, token: Any) -> str:
        """The label of a new claim: the worker's next number. A claim repeated under the same token (a
        report sent twice) keeps its first label."""
        key = key_of(job, worker, token)
        found = self._by_key.get(key)
        if found is not None and token is not None:
            return found
        count = self._claims[worker] = self._claims.get(worker, 0) + 1
        label = self._by_key[key] = f"{worker}#{count}"
        return label

    def of(self, job: str | None, worker: str | None, token: Any) -> str | None:
        """The label of the execution a probe or a queue record names, or None: no claim of it was reported
        (then the worker's name is the best a message can say)."""
        if job is None or worker is None:
            return None
        return self._by_key.get(key_of(job, worker, token))

    def of_event(self, event: Event) -> str | None:
        return self.of(event.job, event.worker, event.data.get("token"))

    def of_record(self, record: Event) -> str:
        """How a message names the execution a queue record names by its token: its label where the probes
        reported that claim, else the record's worker."""
        token = record.data.get("token")
        return (self.of(record.job, record.worker, token) if token is not None else None) or record.worker or "?"


def of_ledger(ledger: Iterable[Event]) -> Labels:
    """Every execution's label, from one pass over the ledger's claim reports."""
    labels = Labels()
    for event in ledger:
        if event.kind == events.PROBE_CLAIM and event.job is not None and event.worker is not None:
            labels.claim(event.job, event.worker, event.data.get("token"))
    return labels
