"""Builds hand-written ledgers for checker tests, without SQLite or processes.

Every probe carries the worker's own wall clock (`clock`), as chaos.probe does: the controller's wall
time plus the worker's skew (0 unless a test says otherwise with `skew`).
"""

from __future__ import annotations

from typing import Any

from chaos.contract import Contract
from chaos.ledger import Event

AT_LEAST_ONCE = Contract(recovery_bound_s=2.0, lease_s=1.0, heartbeat_s=0.25)
WALL_ORIGIN = 1_700_000_000.0


class History:
    def __init__(self, contract: Contract = AT_LEAST_ONCE, **run: Any) -> None:
        self.events: list[Event] = []
        self.t = 0.0
        self.skew: dict[str, float] = {}
        self.add("run.start", target="t", scenario="s", seed=1, contract=contract.to_dict(), command="chaos run", **run)

    def add(self, kind: str, job: str | None = None, worker: str | None = None, /, *, dt: float = 0.01,
            **data: Any) -> History:
        self.t += dt
        wall = WALL_ORIGIN + self.t
        if kind.startswith("probe.") and "clock" not in data:
            data["clock"] = wall + self.skew.get(worker or "", 0.0)
        self.events.append(Event(len(self.events) + 1, self.t, wall, "test", kind, job, worker, data))
        return self

    def enqueue(self, *jobs: str, fail: bool | None = None, handler_s: float = 0.0) -> History:
        """Enqueue jobs; `fail` is recorded only when given (True: a poison job that always fails)."""
        for job in jobs:
            if fail is None:
                self.add("enqueue", job)
            else:
                self.add("enqueue", job, handler_s=handler_s, fail=fail)
        return self

    # -- probes ----------------------------------------------------------------------------------

    def claim(self, job: str, worker: str, token: str | None = None, *, dt: float = 0.01, **data: Any) -> History:
        return self.add("probe.claim", job, worker, dt=dt, token=token or f"{worker}-{job}", **data)

    def effect(self, job: str, worker: str, token: str | None = None, *, dt: float = 0.01,
               accepted: bool = True) -> History:
        return self.add("probe.effect", job, worker, dt=dt, token=token or f"{worker}-{job}", key=job,
                        accepted=accepted)

    def heartbeat(self, job: str, worker: str, token: str | None = None, *, ok: bool = True,
                  dt: float = 0.01) -> History:
        return self.add("probe.heartbeat", job, worker, dt=dt, token=token or f"{worker}-{job}", ok=ok)

    def ack(self, job: str, worker: str, token: str | None = None, *, ok: bool = True, dt: float = 0.01) -> History:
        return self.add("probe.ack", job, worker, dt=dt, token=token or f"{worker}-{job}", ok=ok)

    def abandon(self, job: str, worker: str, token: str | None = None, *, dt: float = 0.01) -> History:
        return self.add("probe.abandon", job, worker, dt=dt, token=token or f"{worker}-{job}")

    def execute(self, job: str, worker: str, ack: bool = True, dt: float = 0.01) -> History:
        self.claim(job, worker, dt=dt)
        self.effect(job, worker)
        if ack:
            self.ack(job, worker)
        return self

    # -- processes -------------------------------------------------------------------------------

    def start(self, worker: str, pid: int = 4242, role: str = "worker", *, dt: float = 0.01) -> History:
        return self.add("process.start", None, worker, dt=dt, pid=pid, role=role)

    def exit(self, worker: str, pid: int = 4242, signal: str | None = "SIGKILL", *, dt: float = 0.01) -> History:
        data: dict[str, Any] = {"pid": pid, "returncode": -9 if signal == "SIGKILL" else 0}
        if signal is not None:
            data["signal"] = signal
        return self.add("process.exit", None, worker, dt=dt, **data)

    # -- faults ----------------------------------------------------------------------------------

    def kill(self, worker: str, fid: str = "f1", gate: str | None = None, exited: bool = True) -> History:
        self.add("fault", None, worker, id=fid, kind="kill", target=worker, gate=gate)
        self.add("fault.applied", None, worker, id=fid, pids=[4242])
        if exited:
            self.add("process.exit", None, worker, pid=4242, returncode=-9, signal="SIGKILL")
        return self

    def stop(self, worker: str, fid: str = "f1", gate: str | None = None, pids: list[int] | None = None,
             *, dt: float = 0.01) -> History:
        """SIGSTOP journaled and applied (heal it with `heal`)."""
        self.add("fault", None, worker, dt=dt, id=fid, kind="stop", target=worker, gate=gate, max_s=5.0)
        return self.add("fault.applied", None, worker, id=fid, pids=[4242] if pids is None else pids)

    def heal(self, worker: str, fid: str = "f1", *, dt: float = 0.01) -> History:
        return self.add("fault.healed", None, worker, dt=dt, id=fid, pids=[4242], condition_held=True)

    def restart(self, worker: str, fid: str = "f1", gate: str | None = None, *, old_pid: int = 4242,
                new_pid: int = 4343, exited: bool = True, started: bool = True, dt: float = 0.01) -> History:
        """As chaos.nemesis does it: journal, SIGKILL reaped, started again under the same name, then applied."""
        self.add("fault", None, worker, dt=dt, id=fid, kind="restart", target=worker, gate=gate)
        if exited:
            self.exit(worker, old_pid)
        if started:
            self.start(worker, new_pid)
        return self.add("fault.applied", None, worker, id=fid, pids=[old_pid], new_pid=new_pid)

    def backend_restart(self, fid: str = "f1", gate: str | None = None, *, happened: bool = True,
                        dt: float = 0.01) -> History:
        """As chaos.nemesis does it: journal, the backend's own `backend.restart` event, then applied."""
        self.add("fault", None, "backend", dt=dt, id=fid, kind="backend_restart", target="backend", gate=gate,
                 mode="immediate")
        if happened:
            self.add("backend.restart", mode="immediate", old_pid=100, new_pid=200, down_s=0.5)
        return self.add("fault.applied", None, "backend", id=fid, mode="immediate", down_s=0.5)

    def clock(self, worker: str, offset_s: float, fid: str = "f1", *, took: bool = True, pid: int = 4242) -> History:
        """Start `worker` with a shifted wall clock (a journaled `clock` fault); `took=False`: the shift
        did not take, so its probes carry the controller's clock."""
        self.add("fault", None, worker, id=fid, kind="clock", target=worker, gate=None, offset_s=offset_s)
        self.start(worker, pid)
        self.skew[worker] = offset_s if took else 0.0
        return self.add("fault.applied", None, worker, id=fid, pids=[pid], offset_s=offset_s)

    def snapshot(self, **states: str) -> History:
        for job, state in states.items():
            self.add("snapshot", job, state=state, owner=None)
        self.add("snapshot.taken", jobs=len(states))
        return self.add("run.end", status="ok")

    def snapshot_with(self, **states: dict[str, Any]) -> History:
        """A final snapshot with full job states, e.g. a={"state": "dead", "attempts": 3}."""
        for job, state in states.items():
            self.add("snapshot", job, **{"owner": None, **state})
        self.add("snapshot.taken", jobs=len(states))
        return self.add("run.end", status="ok")
