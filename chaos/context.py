"""The scenario context: everything a scenario drives (jobs, workers, gates, faults) and the waits it
orders them with. Racing steps are ordered through gates and ledger observations, never sleeps."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chaos.contract import Contract
from chaos.errors import ChaosError, NotExercised
from chaos.gates import Gate
from chaos.ledger import Event
from chaos.nemesis import Nemesis, faketime_env
from chaos.sink import Sink
from chaos.supervisor import Scope, Supervisor
from chaos.target import Control, Job

if TYPE_CHECKING:
    from chaos.run import Run

GATE_TIMEOUT_S = 30.0
SNAPSHOT_POLL_S = 0.05
RECONCILER = "reconciler"


class ScenarioContext:
    def __init__(self, run: Run, control: Control, sink: Sink, supervisor: Supervisor, nemesis: Nemesis,
                 seed: int) -> None:
        self.run = run
        self.control = control
        self.sink = sink
        self.supervisor = supervisor
        self.nemesis = nemesis
        self.ledger = run.ledger
        self.contract: Contract = run.target.contract
        self.rng = random.Random(seed)
        self.jobs: list[str] = []
        self._workers = 0

    # -- jobs ------------------------------------------------------------------------------------

    def enqueue(self, count: int, *, handler_s: float = 0.0, fail: bool = False) -> list[str]:
        jobs = [Job(f"job-{len(self.jobs) + i + 1:04d}", handler_s, fail) for i in range(count)]
        return self.enqueue_jobs(jobs)

    def enqueue_jobs(self, jobs: list[Job]) -> list[str]:
        self.control.enqueue(jobs)
        for job in jobs:
            self.ledger.append("enqueue", "controller", job=job.id, data=job.payload())
            self.jobs.append(job.id)
        return [job.id for job in jobs]

    # -- processes -------------------------------------------------------------------------------

    def start_worker(self, name: str | None = None, *, clock_offset_s: float | None = None) -> str:
        """Start a worker; with `clock_offset_s` its wall clock is shifted (a journaled `clock` fault)."""
        if name is None:
            self._workers += 1
            name = f"w{self._workers}"
        env = self.run.worker_env(self.control, name, self.sink)
        fault_id = None
        if clock_offset_s is not None:
            env.update(faketime_env(clock_offset_s))
            fault_id = self.nemesis.journal("clock", name, None, offset_s=clock_offset_s)
        managed = self.supervisor.start(name, self.run.target.command(self.run.target.worker), env,
                                        cwd=self.run.target.path)
        if fault_id is not None:
            self.nemesis.applied(fault_id, name, pids=[managed.pid], offset_s=clock_offset_s)
        return name

    def start_reconciler(self) -> str | None:
        """Start the target's reconciler/rescuer process, if it has one."""
        argv = self.run.target.reconciler
        if argv is None:
            return None
        env = self.run.worker_env(self.control, RECONCILER, self.sink)
        self.supervisor.start(RECONCILER, self.run.target.command(argv), env, role="reconciler",
                              cwd=self.run.target.path)
        return RECONCILER

    @property
    def has_reconciler(self) -> bool:
        return self.run.target.reconciler is not None

    # -- gates and observations ------------------------------------------------------------------

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        return self.sink.arm(spec, job=job, worker=worker, nth=nth)

    def wait(self, gate: Gate, timeout: float = GATE_TIMEOUT_S) -> dict[str, Any]:
        """Wait for a gate; raises NotExercised (an inconclusive run) if it never matches."""
        return gate.wait(timeout)

    def release(self, gate: Gate) -> None:
        self.sink.release(gate)

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, what: str) -> Event:
        """Wait for a ledger event; raises NotExercised naming `what` if it never comes."""
        event = self.ledger.wait_for(predicate, timeout)
        if event is None:
            raise NotExercised(f"{what} did not happen within {timeout:.1f}s")
        return event

    def probe_of(self, point: str, job: str, *, worker: str | None = None, not_worker: str | None = None,
                 token: str | None = None) -> Callable[[Event], bool]:
        """A ledger predicate for a probe of `job` (by, or not by, a worker; or with a token)."""
        kind = f"probe.{point}"
        return lambda e: (e.kind == kind and e.job == job and (worker is None or e.worker == worker)
                          and (not_worker is None or e.worker != not_worker)
                          and (token is None or e.data.get("token") == token))

    def execution_ended(self, job: str, token: str) -> Callable[[Event], bool]:
        """A ledger predicate: the execution holding `token` acked or abandoned its job."""
        return lambda e: e.kind in ("probe.ack", "probe.abandon") and e.job == job and e.data.get("token") == token

    # -- faults ----------------------------------------------------------------------------------

    def kill(self, worker: str, gate: Gate | None = None, scope: Scope = "tree") -> list[int]:
        return self.nemesis.kill(worker, scope, gate)

    def kill_held(self, gate: Gate, scope: Scope = "tree") -> dict[str, Any]:
        """Wait until `gate` holds a worker, SIGKILL it while held, then release the gate.

        Returns the held probe: the ledger then proves the kill landed exactly in the gated window.
        """
        held = self.wait(gate)
        self.kill(held["worker"], gate=gate, scope=scope)
        self.release(gate)
        return held

    def stop_until(self, worker: str, predicate: Callable[[Event], bool], max_s: float,
                   gate: Gate | None = None) -> bool:
        """SIGSTOP a worker until a ledger event satisfies `predicate` (or `max_s` passes), then SIGCONT.

        A held gate is released while the worker is stopped, so its answer waits for it on resume.
        """
        def until(limit: float) -> bool:
            return self.ledger.wait_for(predicate, limit) is not None

        def release_gate() -> None:
            if gate is not None:
                self.release(gate)

        return self.nemesis.stop(worker, until, max_s, gate, release_gate)

    def restart(self, name: str, gate: Gate | None = None) -> int:
        return self.nemesis.restart(name, gate)

    def restart_backend(self, mode: str = "immediate", gate: Gate | None = None) -> None:
        self.nemesis.restart_backend(mode, gate)

    # -- the queue's own view --------------------------------------------------------------------

    def wait_drained(self, timeout: float) -> bool:
        """Poll the queue's own view until every enqueued job is terminal; false if it never drains."""
        deadline = time.monotonic() + timeout
        wanted = set(self.jobs)
        last_error = ""
        while True:
            try:
                states = {s.job: s.state for s in self.control.snapshot()}
                if all(states.get(job, "absent") in ("done", "dead", "absent") for job in wanted):
                    self.ledger.append("drained", "controller", data={"jobs": len(wanted)})
                    return True
                last_error = ""
            except ChaosError:
                raise
            except Exception as exc:  # noqa: BLE001 - the backend may be restarting; keep polling
                last_error = repr(exc)
            if time.monotonic() >= deadline:
                self.ledger.append("drain.timeout", "controller", data={"timeout_s": timeout, "error": last_error})
                return False
            time.sleep(SNAPSHOT_POLL_S)

    def recovery_deadline(self, margin_s: float = 2.0) -> float:
        """How long to wait for the queue to drain after a fault: the contract's bound plus a margin."""
        return self.contract.recovery_bound_s + margin_s

    def long_handler_s(self) -> float:
        """A handler duration well past the target's ownership deadline: 2.5 leases, or, without a lease,
        1.5 recovery bounds (which cover a rescuer's age threshold)."""
        if self.contract.lease_s:
            return round(2.5 * self.contract.lease_s, 3)
        return round(1.5 * self.contract.recovery_bound_s, 3)
