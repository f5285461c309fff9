"""The queue's vocabulary, as the suite and a target's control speak it: the jobs a scenario enqueues
(`Job`), each job's end state as the queue sees it (`JobState`), an entry of the queue's own record of
ownership (`QueueRecord`), and what a target's control and observer classes provide (`Control`,
`Observer`).

It sits low, beside `chaos.backends.base`: every backend kind's control and observer helpers speak it,
and `chaos.target` (which loads target.toml and checks `[server]` against the backend kinds) sits above
them. Target authors import these names from `chaos`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from chaos.backends.base import Endpoint


@dataclass(frozen=True)
class Job:
    """A job the scenario enqueues: how long its handler runs, and whether it always fails (poison)."""

    id: str
    handler_s: float = 0.0
    fail: bool = False

    def payload(self) -> dict[str, Any]:
        return {"handler_s": self.handler_s, "fail": self.fail}


@dataclass(frozen=True)
class JobState:
    """One job as the queue sees it at the end: pending, claimed, done, dead (or absent)."""

    job: str
    state: str
    owner: str | None = None
    attempts: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueRecord:
    """One entry of the queue's own record of ownership: `kind` claim (it committed a claim), complete (it
    accepted a completion), release (it took the job back: a retry, an expiry, a requeue) or fail (it
    recorded the job failed or dead); `actor` the worker it names (the name the suite gave it, where the
    library takes one), `at` the queue's own timestamp (epoch seconds), `order` its own order."""

    kind: str
    job: str
    actor: str | None
    at: float
    order: int
    token: str | None = None


class Observer(Protocol):
    """A target's observer: it reads the queue's own record of who claimed and who completed a job, so
    the checker judges ownership from what the queue committed, not only from what handlers reported.
    Constructed like the control, with (backend, params, contract).

    `covers`: the record kinds the queue lets it see (claim, complete, release, fail). The checker judges
    stale completions from the record only where it covers both claims and completions, and compares the
    two sources only on what it covers: a broker that shows deliveries but not acks covers claims alone.
    A class attribute, or the instance's where the server decides: an observer that may not look at the
    server it was given (a server of yours, not the suite's) covers nothing there, and may say why in a
    `note` the run journals with it."""

    covers: frozenset[str]

    def install(self) -> None:
        """Start recording (triggers, an event stream), after the control's setup and before any job."""

    def read(self) -> list[QueueRecord]:
        """The records made since the last read, in the queue's order."""

    def close(self) -> None: ...


class Control(Protocol):
    """What a target's control class provides. It runs in the suite's process, constructed with
    (backend, params, contract): `backend` is the started server (`dsn`, `endpoint`), params the target's
    [params] as typed values (a string, an integer, a float or a boolean each), the contract its
    [contract] table.

    `shows_deliveries`: whether `snapshot()` can show a job out for delivery. A queue that cannot (a
    broker's unacknowledged message is in no queue) sets it False: the suite then counts a job as drained
    only once it is dead, or an ack of it was accepted."""

    shows_deliveries: ClassVar[bool]

    def setup(self) -> None:
        """Create the queue (schema, tables) on the fresh backend."""

    def enqueue(self, jobs: list[Job]) -> None:
        """Put jobs in the queue; the suite's job id must travel in the queue's own payload, since every
        probe names it."""

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The connection settings of one worker, built from the endpoint it is handed (its own way to
        the backend: a proxy when the scenario cuts the network), never from the backend's address."""

    def snapshot(self) -> list[JobState]:
        """Every job as the queue itself sees it: pending, claimed (by whom), done, dead, or absent."""

    def completion(self, job: str, token: str) -> str | tuple[str, str]:
        """Whether the queue took the completion of `job` by the execution that claimed it with `token`:
        "accepted", "refused" (it was no longer that execution's to complete), "done" (the queue completed
        the job, but does not record whether by this execution's ack or another's: the job counts as
        completed, the ack as neither accepted nor refused) or "unknown". Asked for each ack a worker
        reported with ok null (a library that completes jobs itself, out of the handler's sight), while the
        run drains and before its final snapshot. A queue that keeps no record of which execution completed
        a job answers "unknown" (`KeepsNoCompletions`).

        An outcome alone is read from the queue's record of whose ack completed the job; `(outcome, source)`
        names what the control read (`events.SOURCES`): "result-store" for a result backend, whose
        "accepted" proves the execution ran to completion, and no ack (it stores a stale owner's result too)."""

    def close(self) -> None: ...


CONTROL_MEMBERS = ("shows_deliveries", "setup", "enqueue", "worker_env", "snapshot", "completion", "close")


class KeepsNoCompletions:
    """For a control whose queue keeps no record of which execution completed a job: the workers' acks
    say what they can, and the control answers every question about one "unknown"."""

    def completion(self, job: str, token: str) -> str | tuple[str, str]:
        return "unknown"
