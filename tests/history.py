"""Builds hand-written ledgers for checker tests, without SQLite or processes.

Every event comes from a `chaos.events` constructor, as the suite's own producers write it, and each
fault helper journals in the order the nemesis does (`test_journal_order` holds the two together).
`add` is the escape hatch for deliberately odd ledgers; it still refuses a kind the vocabulary lacks.
Every probe carries the worker's own wall clock (`clock`), as chaos.probe does: the controller's wall
time plus the worker's skew (0 unless a test says otherwise with `skew`).
"""

from __future__ import annotations

from typing import Any

from chaos import events
from chaos.contract import Contract
from chaos.events import Event, Record

AT_LEAST_ONCE = Contract(recovery_bound_s=2.0)  # no lease: ownership ends with its owner (row or advisory locks)
WALL_ORIGIN = 1_700_000_000.0
PID = 4242
SETTLE_S = 2.5  # a run's wait for recovery before its final snapshot: past AT_LEAST_ONCE's recovery bound


class History:
    def __init__(self, contract: Contract = AT_LEAST_ONCE, **run: Any) -> None:
        self.events: list[Event] = []
        self.t = 0.0
        self.skew: dict[str, float] = {}
        self.record(events.run_start(target="t", scenario="s", seed=1, contract=contract.to_dict(),
                                     command="chaos run", **run))

    def record(self, record: Record, *, dt: float = 0.01) -> History:
        """Stamp one event `dt` seconds after the previous one."""
        kind, source, job, worker, data = record
        self.t += dt
        wall = WALL_ORIGIN + self.t
        if kind.startswith(events.PROBE_PREFIX) and "clock" not in data:
            data = dict(data, clock=wall + self.skew.get(worker or "", 0.0))
        self.events.append(Event(len(self.events) + 1, self.t, wall, source, kind, job, worker, data))
        return self

    def add(self, kind: str, job: str | None = None, worker: str | None = None, /, *, dt: float = 0.01,
            **data: Any) -> History:
        """A raw event of a known kind, with exactly the data given."""
        assert kind in events.KINDS, f"{kind!r} is not an event kind of chaos.events"
        return self.record(Record(kind, "test", job, worker, data), dt=dt)

    def enqueue(self, *jobs: str, fail: bool | None = None, handler_s: float = 0.0) -> History:
        """Enqueue jobs; `fail` is recorded only when given (True: a poison job that always fails)."""
        for job in jobs:
            self.record(events.enqueue(job, {} if fail is None else {"handler_s": handler_s, "fail": fail}))
        return self

    # -- gates -----------------------------------------------------------------------------------

    def armed(self, gate: str, spec: str, job: str | None = None) -> History:
        return self.record(events.gate_armed(gate, spec, job, None))

    def matched(self, gate: str, job: str, worker: str, point: str = events.EFFECT) -> History:
        return self.record(events.gate_matched(gate, f"after:{point}", point, job, worker, PID))

    # -- probes ----------------------------------------------------------------------------------

    def probe(self, point: str, job: str, worker: str, token: str | None = None, *, dt: float = 0.01,
              **data: Any) -> History:
        return self.record(events.probe(point, job, worker, dict(data, token=token or f"{worker}-{job}")), dt=dt)

    def claim(self, job: str, worker: str, token: str | None = None, *, dt: float = 0.01, **data: Any) -> History:
        return self.probe(events.CLAIM, job, worker, token, dt=dt, **data)

    def effect(self, job: str, worker: str, token: str | None = None, *, dt: float = 0.01,
               accepted: bool = True) -> History:
        return self.probe(events.EFFECT, job, worker, token, dt=dt, key=job, accepted=accepted)

    def heartbeat(self, job: str, worker: str, token: str | None = None, *, ok: bool = True,
                  dt: float = 0.01) -> History:
        return self.probe(events.HEARTBEAT, job, worker, token, dt=dt, ok=ok)

    def ack(self, job: str, worker: str, token: str | None = None, *, ok: bool | None = True,
            dt: float = 0.01, source: str | None = None) -> History:
        """`source`: what the ok is the word of (events.SOURCES); absent, the worker's report."""
        return self.probe(events.ACK, job, worker, token, dt=dt, ok=ok, **({"source": source} if source else {}))

    def answer(self, job: str, worker: str, token: str, outcome: str, source: str = events.QUEUE_RECORD, *,
               dt: float = 0.01) -> History:
        """The control's answer on an ack reported with ok null (`Control.completion`), read from `source`."""
        return self.record(events.completion(job, worker, token, outcome, source), dt=dt)

    def abandon(self, job: str, worker: str, token: str | None = None, *, reason: str | None = None,
                dt: float = 0.01) -> History:
        return self.probe(events.ABANDON, job, worker, token, dt=dt, **({"reason": reason} if reason else {}))

    def execute(self, job: str, worker: str, ack: bool = True, dt: float = 0.01) -> History:
        self.claim(job, worker, dt=dt)
        self.effect(job, worker)
        if ack:
            self.ack(job, worker)
        return self

    # -- processes -------------------------------------------------------------------------------

    def start(self, worker: str, pid: int = PID, role: str = "worker", *, dt: float = 0.01) -> History:
        return self.record(events.process_start(worker, pid, role), dt=dt)

    def exit(self, worker: str, pid: int = PID, signal: str | None = "SIGKILL", *, dt: float = 0.01) -> History:
        return self.record(events.process_exit(worker, pid, "worker", -9 if signal == "SIGKILL" else 0, signal), dt=dt)

    # -- faults, journaled as chaos.runtime.nemesis does -----------------------------------------

    def journal(self, kind: str, target: str, fid: str = "f1", gate: str | None = None, *, dt: float = 0.01,
                **params: Any) -> History:
        return self.record(events.fault(fid, kind, target, gate, params), dt=dt)

    def applied(self, target: str, fid: str = "f1", **data: Any) -> History:
        return self.record(events.fault_applied(fid, target, data))

    def kill(self, worker: str, fid: str = "f1", gate: str | None = None, exited: bool = True) -> History:
        """Journal, SIGKILL applied, then the reaped exit (the nemesis waits for it after `fault.applied`)."""
        self.journal("kill", worker, fid, gate, scope="tree").applied(worker, fid, pids=[PID])
        return self.exit(worker) if exited else self

    def stop(self, worker: str, fid: str = "f1", gate: str | None = None, pids: list[int] | None = None,
             *, dt: float = 0.01, until: str | None = None, until_job: str | None = None,
             premise: bool = True) -> History:
        """SIGSTOP journaled and applied (heal it with `heal`); `until` names the condition it is held until,
        about `until_job`, as `ctx.stop_until` journals a named one."""
        named = {"until": until, "until_job": until_job, "premise": premise} if until is not None else {}
        self.journal("stop", worker, fid, gate, dt=dt, max_s=5.0, **named)
        return self.applied(worker, fid, pids=[PID] if pids is None else pids)

    def heal(self, worker: str, fid: str = "f1", *, dt: float = 0.01, held: bool = True) -> History:
        """The heal, with whether the fault's condition held (else it ended on its deadline)."""
        return self.record(events.fault_healed(fid, worker, {"pids": [PID], "condition_held": held}), dt=dt)

    def restart(self, worker: str, fid: str = "f1", gate: str | None = None, *, old_pid: int = PID,
                new_pid: int = 4343, exited: bool = True, started: bool = True, dt: float = 0.01) -> History:
        """Journal, SIGKILL reaped, started again under the same name, then applied."""
        self.journal("restart", worker, fid, gate, dt=dt)
        if exited:
            self.exit(worker, old_pid)
        if started:
            self.start(worker, new_pid)
        return self.applied(worker, fid, pids=[old_pid], new_pid=new_pid)

    def backend_restart(self, fid: str = "f1", gate: str | None = None, *, happened: bool = True,
                        dt: float = 0.01) -> History:
        """Journal, the backend's own `backend.restart` event, then applied."""
        self.journal("backend_restart", events.BACKEND, fid, gate, dt=dt, mode="immediate")
        if happened:
            self.record(events.backend_restart("immediate", 100, 200, 0.5))
        return self.applied(events.BACKEND, fid, mode="immediate", down_s=0.5)

    def clock(self, worker: str, offset_s: float, fid: str = "f1", *, took: bool = True, pid: int = PID) -> History:
        """Start `worker` with a shifted wall clock (a journaled `clock` fault); `took=False`: the shift
        did not take, so its probes carry the controller's clock."""
        self.journal("clock", worker, fid, offset_s=offset_s)
        self.start(worker, pid)
        self.skew[worker] = offset_s if took else 0.0
        return self.applied(worker, fid, pids=[pid], offset_s=offset_s)

    def partition(self, worker: str, fid: str = "f1", mode: str = "disable", *, cut: int = 0) -> History:
        """Journaled, the proxy's own report of the connections it closed (when `cut`), then applied."""
        self.journal("partition", worker, fid, mode=mode)
        if cut:
            self.record(events.network_cut(worker, cut))
        return self.applied(worker, fid, mode=mode, proxy=f"run-{worker}")

    # -- the end -----------------------------------------------------------------------------------

    def queue(self, kind: str, job: str, actor: str | None, order: int, token: str | None = None, *,
              dt: float = 0.01, covers: tuple[str, ...] = ("claim", "complete", "release", "fail")) -> History:
        """An entry of the queue's own record, as a target's observer journals it (its own `order`); the
        first one journals the observer's start with what it `covers`, as the run does."""
        if not any(e.kind == events.OBSERVER_START for e in self.events):
            self.record(events.observer_start("observer:Observer", sorted(covers)))
        return self.record(events.queue_record(kind, job, actor, {"at": WALL_ORIGIN + self.t, "order": order,
                                                                   "token": token}), dt=dt)

    def snapshot(self, **states: str) -> History:
        """A final snapshot of job states, taken after the recovery bound (as a run that waited takes it)."""
        return self.final_snapshot({job: {"state": state} for job, state in states.items()}, SETTLE_S)

    def snapshot_with(self, *, dt: float = SETTLE_S, **states: dict[str, Any]) -> History:
        """A final snapshot with full job states, e.g. a={"state": "dead", "attempts": 3}, taken `dt` after
        the last event (by default after the recovery bound)."""
        return self.final_snapshot(states, dt)

    def final_snapshot(self, states: dict[str, dict[str, Any]], dt: float) -> History:
        for job, state in states.items():
            detail = {k: v for k, v in state.items() if k not in ("state", "owner", "attempts")}
            self.record(events.snapshot(job, state["state"], state.get("owner"), state.get("attempts"), detail),
                        dt=dt)
            dt = 0.01
        self.record(events.snapshot_taken(len(states)))
        return self.record(events.run_end("ok", ""))
