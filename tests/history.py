"""Builds hand-written ledgers for checker tests, without SQLite or processes."""

from __future__ import annotations

from typing import Any

from chaos.contract import Contract
from chaos.ledger import Event

AT_LEAST_ONCE = Contract(recovery_bound_s=2.0, lease_s=1.0, heartbeat_s=0.25)


class History:
    def __init__(self, contract: Contract = AT_LEAST_ONCE, **run: Any) -> None:
        self.events: list[Event] = []
        self.t = 0.0
        self.add("run.start", target="t", scenario="s", seed=1, contract=contract.to_dict(), command="chaos run", **run)

    def add(self, kind: str, job: str | None = None, worker: str | None = None, /, *, dt: float = 0.01,
            **data: Any) -> History:
        self.t += dt
        self.events.append(Event(len(self.events) + 1, self.t, 1_700_000_000 + self.t, "test", kind, job, worker, data))
        return self

    def enqueue(self, *jobs: str) -> History:
        for job in jobs:
            self.add("enqueue", job)
        return self

    def execute(self, job: str, worker: str, ack: bool = True, dt: float = 0.01) -> History:
        self.add("probe.claim", job, worker, dt=dt, token=f"{worker}-{job}")
        self.add("probe.effect", job, worker, token=f"{worker}-{job}", accepted=True)
        if ack:
            self.add("probe.ack", job, worker, token=f"{worker}-{job}", ok=True)
        return self

    def kill(self, worker: str, fid: str = "f1", gate: str | None = None, exited: bool = True) -> History:
        self.add("fault", None, worker, id=fid, kind="kill", target=worker, gate=gate)
        self.add("fault.applied", None, worker, id=fid, pids=[4242])
        if exited:
            self.add("process.exit", None, worker, pid=4242, returncode=-9, signal="SIGKILL")
        return self

    def snapshot(self, **states: str) -> History:
        for job, state in states.items():
            self.add("snapshot", job, state=state, owner=None)
        self.add("snapshot.taken", jobs=len(states))
        return self.add("run.end", status="ok")
