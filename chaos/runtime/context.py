"""The scenario context (`chaos.scenario.Context`): everything a scenario drives (jobs, workers,
gates, faults) and the waits it orders them with. Racing steps are ordered through gates and ledger
observations, never sleeps. Every fault goes through the nemesis."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from chaos import events
from chaos.contract import Contract
from chaos.errors import ChaosError, ConfigError, HarnessError, NotExercised
from chaos.events import Event
from chaos.faults import clock
from chaos.ledger import Ledger
from chaos.names import check_name
from chaos.queue_model import Control, Job, JobState
from chaos.runtime.completions import Completions
from chaos.runtime.control_process import ControlAnswerError
from chaos.runtime.gates import Gate as ArmedGate
from chaos.runtime.launcher import Launcher
from chaos.runtime.nemesis import ActiveFault, Nemesis
from chaos.runtime.sink import Sink
from chaos.runtime.warmup import Warmup
from chaos.scenario import Condition, Context, Gate, HeldProbe, NetworkFault

GATE_TIMEOUT_S = 30.0
WORKERS_CHECK_S = 0.1  # how often a gate wait checks that some worker is still alive to reach it
SNAPSHOT_POLL_S = 0.05


class ScenarioContext(Context):
    """The run's `Context`: what only a run can do; the fault verbs it inherits."""

    def __init__(self, ledger: Ledger, contract: Contract, control: Control, sink: Sink, launcher: Launcher,
                 nemesis: Nemesis, seed: int, activity: list[str], params: dict[str, str] | None = None) -> None:
        self.ledger = ledger
        self.contract = contract
        self.control = control
        self.completions = Completions(control, ledger)  # the control's word on acks reported with ok null
        self.sink = sink
        self.launcher = launcher
        self.nemesis = nemesis
        self.rng = random.Random(seed)
        self.jobs: list[str] = []
        self._workers = 0
        self._activity = activity  # what the run is doing, for a deadline's message
        self._params = dict(params or {})
        self.warmup = Warmup(self._params.get("warmup") == "true", ledger.events, self._put, self._alive)
        self._doing("running the scenario")

    def param(self, name: str) -> str:
        if name not in self._params:
            raise HarnessError(f"the scenario asked for parameter {name!r}, which its PARAMS does not declare")
        return self._params[name]

    def _doing(self, what: str) -> None:
        self._activity[0] = what

    # -- jobs ------------------------------------------------------------------------------------

    def enqueue(self, count: int, *, handler_s: float = 0.0, fail: bool = False) -> list[str]:
        jobs = [Job(f"job-{len(self.jobs) + i + 1:04d}", handler_s, fail) for i in range(count)]
        return self.enqueue_jobs(jobs)

    def enqueue_jobs(self, jobs: list[Job]) -> list[str]:
        """Under `-s warmup=true`, jobs enqueued before the first workers are ready are held until they are."""
        self.jobs += [job.id for job in jobs]
        if self.warmup.pending:
            self._doing("waiting for the workers to say they are ready (-s warmup=true)")
        self.warmup.enqueue(jobs)
        self._doing("running the scenario")
        return [job.id for job in jobs]

    def _put(self, jobs: list[Job]) -> None:
        self.control.enqueue(jobs)
        for job in jobs:
            self.ledger.append(events.enqueue(job.id, job.payload()))

    # -- processes -------------------------------------------------------------------------------

    def start_worker(self, name: str | None = None, *, clock_offset_s: float | None = None) -> str:
        name = self._start(name, clock_offset_s)
        self._warm([name])
        return name

    def start_workers(self, count: int, *, clock_offset_s: float | None = None) -> list[str]:
        names = [self._start(None, clock_offset_s) for _ in range(count)]
        self._warm(names)
        return names

    def _warm(self, names: list[str]) -> None:
        if self.warmup.pending:
            self._doing(f"waiting for {', '.join(names)} to say they are ready (-s warmup=true)")
        self.warmup.started(names)
        self._doing("running the scenario")

    def _alive(self, name: str) -> bool:
        process = self.launcher.supervisor.processes.get(name)
        return process is not None and process.alive

    def _start(self, name: str | None, clock_offset_s: float | None) -> str:
        if name is None:
            self._workers += 1
            name = f"w{self._workers}"
        check_name(name, "worker name", "Pass ctx.start_worker() a plain name such as 'w1', or none.")
        if clock_offset_s is None:
            self.launcher.start_worker(name)
        else:
            self.nemesis.inject(clock.KIND.name, name, offset_s=clock_offset_s)
        return name

    @property
    def has_reconciler(self) -> bool:
        return self.launcher.target.reconciler is not None

    # -- gates and observations ------------------------------------------------------------------

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        """Refuses a `worker=` filter naming no worker started yet: such a gate could never match."""
        started = self.launcher.supervisor.processes
        if worker is not None and worker not in started:
            known = ", ".join(sorted(started)) or "none yet"
            raise ConfigError(f"Scenario: ctx.arm({spec!r}, worker={worker!r}) names no worker of this run (started: "
                              f"{known}). Start the worker before arming a gate on it, or leave worker= out.")
        return self.sink.arm(spec, job=job, worker=worker, nth=nth)

    def wait(self, gate: Gate, timeout: float = GATE_TIMEOUT_S) -> HeldProbe:
        """Ends at once, inconclusive, when no worker is left alive to send the probe the gate waits for."""
        armed = _armed(gate)
        self._doing(f"waiting for gate {armed.id} ({armed.spec}) to hold a probe")
        until = time.monotonic() + timeout
        while not armed.poll(min(WORKERS_CHECK_S, max(0.0, until - time.monotonic()))):
            if self.launcher.supervisor.all_exited("worker"):
                raise NotExercised(f"gate {armed.id} ({armed.spec}) can no longer match: every worker has exited")
            if time.monotonic() >= until:
                raise NotExercised(f"gate {armed.spec} never matched within {timeout:.1f}s: fault not exercised")
        held = HeldProbe.from_probe(armed.wait(0.0))
        self._doing("running the scenario")
        return held

    def release(self, gate: Gate) -> None:
        self.sink.release(_armed(gate))

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, what: str) -> Event:
        self._doing(f"waiting for {what}")
        event = self.ledger.wait_for(predicate, timeout)
        self._doing("running the scenario")
        if event is None:
            raise NotExercised(f"{what} did not happen within {timeout:.1f}s")
        return event

    def probe_of(self, point: str, job: str, *, worker: str | None = None, not_worker: str | None = None,
                 token: str | None = None) -> Condition:
        kind = events.PROBE_PREFIX + point
        words = [f"a {point} probe of {job}"]
        words += [f"from {worker}"] if worker is not None else []
        words += [f"from a worker other than {not_worker}"] if not_worker is not None else []
        words += [f"with token {token}"] if token is not None else []
        return Condition(" ".join(words), lambda e: (
            e.kind == kind and e.job == job and (worker is None or e.worker == worker)
            and (not_worker is None or e.worker != not_worker) and (token is None or e.data.get("token") == token)),
            job)

    def execution_ended(self, job: str, token: Any) -> Condition:
        ends = (events.PROBE_ACK, events.PROBE_ABANDON)
        return Condition(f"the execution of {job} with token {token} acks or abandons it",
                         lambda e: e.kind in ends and e.job == job and e.data.get("token") == token, job)

    @property
    def leased(self) -> bool:
        return self.contract.renewal_bound_s is not None

    # -- faults (the built-in kinds' verbs are Context's, over these) -----------------------------------

    def inject(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> dict[str, Any]:
        return self.nemesis.inject(kind, target, _armed_or_none(gate), **params)

    def begin(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> ActiveFault:
        return self.nemesis.begin(kind, target, _armed_or_none(gate), **params)

    def hold_until(self, kind: str, target: str, predicate: Callable[[Event], bool], max_s: float,
                   gate: Gate | None = None, *, premise: bool = True, **params: Any) -> bool:
        """A named predicate's words are journaled with the fault (`until`, `until_job`, and whether it is the
        scenario's `premise`) for the checker; the held gate's answer waits for the heal (a SIGCONT, a
        thaw), which comes in the nemesis's `finally`."""
        if isinstance(predicate, Condition):
            params.update(until=predicate.text, until_job=predicate.job, premise=premise)
        with self.nemesis.active(kind, target, _armed_or_none(gate), max_s=max_s, **params) as fault:
            if gate is not None:
                self.release(gate)
            self._doing(f"holding {target} under a {kind} fault")
            held = self.ledger.wait_for(predicate, max_s) is not None
            fault.healed["condition_held"] = held
        self._doing("running the scenario")
        return held

    def heal(self, fault: NetworkFault) -> None:
        if not isinstance(fault, ActiveFault):
            raise HarnessError(f"{fault!r} is not a fault this run's ctx put in place")
        self.nemesis.end(fault)

    def waive(self, kind: str, why: str) -> None:
        """Say why this run does not inject a fault kind its FAULTS declares (the checker otherwise calls a
        declared kind never injected inconclusive: the run proved nothing under it)."""
        self.ledger.append(events.fault_waived(kind, why))

    # -- the queue's own view --------------------------------------------------------------------

    def snapshot(self) -> list[JobState]:
        return self.control.snapshot()

    @property
    def shows_deliveries(self) -> bool:
        return bool(self.control.shows_deliveries)

    def wait_drained(self, timeout: float) -> bool:
        """Ends once every job is finished, or at `timeout`, or a recovery bound after no process was left
        that could finish one: waiting longer would change nothing but the run's length, and a job its
        lost owner left is judged as after the full wait (not stuck: nobody was left to take it)."""
        deadline = time.monotonic() + timeout
        wanted = set(self.jobs)
        self._doing(f"waiting for the queue to drain its {len(wanted)} job(s)")
        last_error = ""
        idle_since: float | None = None
        while True:
            if not self.launcher.supervisor.nothing_works():
                idle_since = None  # a worker started meanwhile (from a scenario's thread) starts the wait over
            elif idle_since is None:
                idle_since = time.monotonic()
            try:
                states = {s.job: s.state for s in self.control.snapshot()}
                if self.control.shows_deliveries:
                    finished = {job for job in wanted if states.get(job, "absent") in ("done", "dead", "absent")}
                else:  # absent may be out for delivery: only a dead letter or an accepted ack finishes a job
                    finished = ({job for job in wanted if states.get(job) == "dead"} | _acked(self.ledger.events())
                                | self.completions.accepted())
                if wanted <= finished:
                    self.ledger.append(events.drained(len(wanted)))
                    self._doing("running the scenario")
                    return True
                last_error = ""
            except ControlAnswerError as exc:  # a control process's error answer: as a class's exception
                last_error = str(exc)
            except ChaosError:
                raise
            except Exception as exc:  # noqa: BLE001 - the backend may be restarting; keep polling
                last_error = repr(exc)
            if idle_since is not None and time.monotonic() >= idle_since + self.contract.recovery_bound_s:
                self.ledger.append(events.drain_timeout(timeout, last_error, workers_exited=True))
                self._doing("running the scenario")
                return False
            if time.monotonic() >= deadline:
                self.ledger.append(events.drain_timeout(timeout, last_error))
                self._doing("running the scenario")
                return False
            time.sleep(SNAPSHOT_POLL_S)

    def recovery_deadline(self, margin_s: float = 2.0) -> float:
        return self.contract.recovery_bound_s + margin_s

    def long_handler_s(self) -> float:
        """2.5 leases, or, without a lease, 1.5 recovery bounds (which cover a rescuer's age threshold). A
        lease never renewed (no heartbeat_s) loses such a job on age alone: only lease_shorter_than_handler,
        which judges that, runs it there; the others REQUIRE a renewed lease."""
        if self.contract.lease_s:
            return round(2.5 * self.contract.lease_s, 3)
        return round(1.5 * self.contract.recovery_bound_s, 3)


def _armed(gate: Gate) -> ArmedGate:
    """A gate this run's sink armed (scenarios see gates only through `chaos.scenario.Gate`)."""
    if not isinstance(gate, ArmedGate):
        raise HarnessError(f"{gate!r} is not a gate armed by this run's ctx.arm()")
    return gate


def _armed_or_none(gate: Gate | None) -> ArmedGate | None:
    return None if gate is None else _armed(gate)


def _acked(ledger: list[Event]) -> set[str]:
    """The jobs some execution acked with the queue's acceptance."""
    return {e.job for e in ledger if e.kind == events.PROBE_ACK and e.data.get("ok") is True and e.job is not None}

