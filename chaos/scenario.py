"""Scenarios: one Python file each, with a docstring naming the seed risk it probes, a `run(ctx)` that
drives the run through the `Context` below, and `FAULTS`, the fault kinds it injects: a run whose
backend cannot take one of them is refused before anything starts, and a fault it did not declare is
refused when injected. `REQUIRES` names what it needs of the contract (`REQUIREMENTS`): against a
contract without it, the run is skipped with the reason, before anything starts, never run and passed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chaos.contract import SECONDS, Contract, is_seconds
from chaos.errors import ConfigError
from chaos.events import BACKEND, Event
from chaos.faults import backend_restart, container, kill, partition, restart, stop
from chaos.faults.base import Scope
from chaos.names import check_name
from chaos.queue_model import Job, JobState
from chaos.usercode import load_module

# Parameters every scenario takes (`-s`), besides its own PARAMS; a scenario's own declaration of the same
# name wins (one about start-up declares warmup = ("false",): warming its workers would defeat it).
SHARED_PARAMS: dict[str, tuple[str, ...]] = {
    "warmup": ("false", "true"),  # true: enqueue only once the first workers polled once and are idle
}


def _lease(contract: Contract) -> str | None:
    """Why `contract` gives ownership no deadline ("lease"), or None where it does."""
    if contract.renewal_bound_s is not None:
        return None
    return ("it needs ownership with a deadline (contract lease_s, or reservation_s), and this contract states none: "
            "nothing then says that the queue takes a stopped owner's job, or when, so a new owner cannot be held "
            "for the stale one to race and the situation the scenario tests cannot be arranged")


def _renewed_lease(contract: Contract) -> str | None:
    """Why `contract`'s lease is never renewed ("renewed_lease"), or None where it is, or there is none."""
    if contract.lease_s is None or contract.heartbeat_s is not None:
        return None
    return (f"it needs a lease renewed while its owner works (contract heartbeat_s), and this contract's lease of "
            f"{contract.lease_s:g}s is never renewed (no heartbeat_s: rescue by age alone): its long handler would "
            "lose the job on age alone, which lease_shorter_than_handler judges, and hide what this scenario tests")


# What a scenario may need of the contract (its module's REQUIRES): name -> (the reason a contract cannot
# give it, or None; what it means, for the docs). A contract without a lease meets "renewed_lease": the
# scenario's own path for ownership without a deadline runs.
REQUIREMENTS: dict[str, tuple[Callable[[Contract], str | None], str]] = {
    "lease": (_lease, "ownership has a deadline (lease_s or reservation_s), so the queue may take a stopped "
                      "owner's job"),
    "renewed_lease": (_renewed_lease, "a lease, where there is one, is renewed while its owner works "
                                      "(heartbeat_s)"),
}


class Gate(Protocol):
    """An armed gate (see `Context.arm`)."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True)
class Condition:
    """A ledger predicate with the words that name it. A fault held until a condition journals those
    words, so that a run whose fault ended on its deadline instead can say which premise did not hold."""

    text: str
    test: Callable[[Event], bool]
    job: str | None = None  # the job it is about, whose events say what the queue did instead

    def __call__(self, event: Event) -> bool:
        return self.test(event)


@dataclass(frozen=True)
class HeldProbe:
    """The probe a gate holds: who sent it, for which job and claim, and every field it carried."""

    point: str
    job: str
    worker: str
    token: Any
    pid: int | None
    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_probe(cls, probe: dict[str, Any]) -> HeldProbe:
        return cls(probe["point"], probe["job"], str(probe.get("worker") or ""), probe.get("token"),
                   probe.get("pid"), dict(probe))


class Context(Protocol):
    """What a scenario drives: jobs, the target's processes, gates, faults, and the waits that order them.

    Racing steps are ordered through gates and ledger observations, never sleeps. A wait that never
    ends raises `NotExercised`, which makes the run inconclusive, never a pass.

    The run's context (chaos.runtime.context) subclasses this: it implements the methods that only say
    what they do, and inherits the fault verbs, which are written here once over `inject`, `begin` and
    `hold_until`.
    """

    rng: random.Random  # seeded by --seed, so a run is reproducible
    contract: Contract  # the target's promises (lease_s, recovery_bound_s, ...)
    jobs: list[str]  # every job enqueued so far

    @property
    def has_reconciler(self) -> bool:
        """Whether the target runs a reconciler process (started before the scenario, named "reconciler")."""

    def enqueue(self, count: int, *, handler_s: float = 0.0, fail: bool = False) -> list[str]:
        """Enqueue `count` jobs (job-0001, ...) whose handler runs `handler_s` and fails every time if `fail`.
        Under `-s warmup=true` the first jobs wait for the first workers (see `start_workers`)."""

    def enqueue_jobs(self, jobs: list[Job]) -> list[str]: ...

    def start_worker(self, name: str | None = None, *, clock_offset_s: float | None = None) -> str:
        """Start a worker (w1, w2, ... unless named); with `clock_offset_s` its wall clock is shifted (a
        `clock` fault). Returns its name. Under `-s warmup=true`, see `start_workers`."""

    def start_workers(self, count: int, *, clock_offset_s: float | None = None) -> list[str]:
        """Start `count` workers at once (their names). Under `-s warmup=true` the jobs enqueued so far are
        held, and enqueued only once every worker started so far has polled the queue once and is idle (its
        `ready` probe); so a scenario starts its first workers with one call, not one call each (a job
        would otherwise be enqueued once the first is warm, while the next still starts)."""

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        """Arm a gate such as "after:effect": the nth probe passing its filters (counting those other gates
        hold) is held until released. `worker` must name a worker already started."""

    def wait(self, gate: Gate, timeout: float = ...) -> HeldProbe:
        """Wait until `gate` holds a probe."""

    def release(self, gate: Gate) -> None: ...

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, what: str) -> Event:
        """Wait for a ledger event; `what` names it in the inconclusive verdict if it never comes."""

    def probe_of(self, point: str, job: str, *, worker: str | None = None, not_worker: str | None = None,
                 token: str | None = None) -> Condition:
        """A named ledger predicate: a probe at `point` of `job` (by, or not by, a worker; or with a token)."""

    def execution_ended(self, job: str, token: Any) -> Condition:
        """A named ledger predicate: the execution holding `token` acked or abandoned `job`."""

    @property
    def leased(self) -> bool:
        """Whether ownership has a deadline (contract lease_s or reservation_s): then the queue owes a reclaim
        of a job whose owner stopped renewing it, and "another worker claims the job" is a premise."""

    def waive(self, kind: str, why: str) -> None:
        """Say why this run does not inject a kind its FAULTS declares; a declared kind neither injected
        nor waived makes the run inconclusive (it proved nothing under that fault)."""

    def snapshot(self) -> list[JobState]:
        """Every job as the queue itself sees it now (the target control's snapshot)."""

    @property
    def shows_deliveries(self) -> bool:
        """Whether snapshot() can show a job out for delivery as claimed (the control's `shows_deliveries`)."""

    def wait_drained(self, timeout: float) -> bool:
        """Poll the queue's own view until every enqueued job is terminal; False if it never drains."""

    def recovery_deadline(self, margin_s: float = 2.0) -> float:
        """The contract's recovery bound plus a margin: how long to wait for recovery after a fault."""

    def long_handler_s(self) -> float:
        """A handler duration well past the target's ownership deadline (lease, or rescue age). Under a lease
        never renewed (lease_s without heartbeat_s) the job is lost on age alone: a scenario that needs it
        kept declares REQUIRES = ("renewed_lease",)."""

    def param(self, name: str) -> str:
        """The value of one of the scenario's PARAMS for this run (`chaos run -s name=value`)."""

    # -- faults: any kind, through the nemesis (journaled before it is applied, healed in `finally`) ------

    def inject(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> dict[str, Any]:
        """Apply a fault of `kind` (any registered kind, a plugin's included) to `target` (a worker, the
        reconciler, or "backend"), healing it at once where it heals; what its application recorded (`pids`,
        ...). `params` are the kind's own (a kill's scope, a backend restart's mode). The scenario's FAULTS
        must declare `kind`."""

    def begin(self, kind: str, target: str, gate: Gate | None = None, **params: Any) -> NetworkFault:
        """Apply a fault of `kind` that lasts until `heal` (every one still in place is healed when the
        scenario ends)."""

    def hold_until(self, kind: str, target: str, predicate: Callable[[Event], bool], max_s: float,
                   gate: Gate | None = None, *, premise: bool = True, **params: Any) -> bool:
        """Apply a fault of `kind` to `target`, release a held `gate` once it is in place, wait until a ledger
        event satisfies `predicate` (at most `max_s`), then heal it; whether the predicate held.

        A named predicate (a `Condition`, as `probe_of` gives) is the scenario's premise: when it never
        holds, the run exercised only part of the scenario and is inconclusive unless a violation is proven
        anyway. `premise=False` says that for this contract the condition may rightly never hold (nobody may
        take a job whose ownership has no deadline); an unnamed predicate makes a timed fault."""

    def heal(self, fault: NetworkFault) -> None:
        """End a fault `begin` put in place, now."""

    # -- the built-in kinds' verbs, each written here once over the three above ---------------------------

    def kill(self, worker: str, gate: Gate | None = None, scope: Scope = "tree", pid: int | None = None) -> list[int]:
        """SIGKILL a worker's tree (or only its process, or with scope "sender" the process `pid` of its tree)
        and wait until it is dead; the pids killed."""
        if scope == "sender" and pid is None:
            raise ConfigError("ctx.kill(..., scope='sender') needs the pid of the process that sent the probe "
                              "(held.pid); ctx.kill_held(gate, scope='sender') passes it.")
        sender = {"pid": pid} if scope == "sender" else {}
        pids: list[int] = self.inject(kill.KIND.name, worker, gate, scope=scope, **sender)["pids"]
        return pids

    def kill_held(self, gate: Gate, scope: Scope = "tree") -> HeldProbe:
        """Wait until `gate` holds a worker, SIGKILL it while held (scope "sender": only the process that sent
        the held probe, a pool child whose parent lives on), release the gate; the held probe. The ledger then
        proves the kill landed exactly in the gated window."""
        held = self.wait(gate)
        self.kill(held.worker, gate=gate, scope=scope, pid=held.pid)
        self.release(gate)
        return held

    def stop_until(self, worker: str, predicate: Callable[[Event], bool], max_s: float,
                   gate: Gate | None = None, *, premise: bool = True) -> bool:
        """SIGSTOP a worker until a ledger event satisfies `predicate` (at most `max_s`), then SIGCONT; a held
        `gate` is released while it is stopped (its answer waits for the worker to resume). Whether the
        predicate held; `premise` as for `hold_until`."""
        return self.hold_until(stop.KIND.name, worker, predicate, max_s, gate, premise=premise)

    def pause_until(self, worker: str, predicate: Callable[[Event], bool], max_s: float,
                    gate: Gate | None = None, *, premise: bool = True) -> bool:
        """Freeze a worker's whole container (the cgroup freezer: every process in it, however it detached)
        until `predicate` (at most `max_s`), then thaw it; needs the workers in containers."""
        return self.hold_until(container.PAUSE.name, worker, predicate, max_s, gate, premise=premise)

    def kill_container(self, worker: str, gate: Gate | None = None) -> list[int]:
        """SIGKILL a worker's container: every process in it dies, however it detached; the host pids it held."""
        pids: list[int] = self.inject(container.CONTAINER_KILL.name, worker, gate)["pids"]
        return pids

    def disconnect_backend_until(self, predicate: Callable[[Event], bool], max_s: float,
                                 gate: Gate | None = None, *, premise: bool = True) -> bool:
        """Cut the backend's container off its network until `predicate` (at most `max_s`), then connect it
        again; needs the docker provider."""
        return self.hold_until(container.DISCONNECT.name, BACKEND, predicate, max_s, gate, premise=premise)

    def restart(self, name: str, gate: Gate | None = None) -> int:
        """SIGKILL a worker or the reconciler and start it again under the same name; its new pid."""
        new_pid: int = self.inject(restart.KIND.name, name, gate)["new_pid"]
        return new_pid

    def restart_backend(self, mode: str = "immediate", gate: Gate | None = None) -> None:
        """Restart the backend server (same data, same address) while the workers keep running."""
        self.inject(backend_restart.KIND.name, BACKEND, gate, mode=mode)

    # network faults: a proxy per worker; each healed by `heal`, or at the end of the run

    def partition(self, worker: str, mode: str = "disable", gate: Gate | None = None) -> NetworkFault:
        """Cut `worker` off from its backend: `disable` closes its connections and refuses new ones;
        `blackhole` keeps them open and swallows every byte."""
        return self.begin(partition.KIND.name, worker, gate, mode=mode)

    def partition_until(self, worker: str, predicate: Callable[[Event], bool], max_s: float, mode: str = "disable",
                        gate: Gate | None = None, *, premise: bool = True) -> bool:
        """Partition `worker` until the ledger shows `predicate` (at most `max_s`), releasing `gate` once the
        partition is in place; then heal it. Whether the predicate held (see `hold_until` for `premise`)."""
        return self.hold_until(partition.KIND.name, worker, predicate, max_s, gate, premise=premise, mode=mode)

    def latency(self, worker: str, ms: int, jitter_ms: int = 0) -> NetworkFault:
        """Delay each chunk of `worker`'s traffic by `ms` (+/- `jitter_ms`) in each direction."""
        return self.begin("latency", worker, latency_ms=ms, jitter_ms=jitter_ms)

    def bandwidth(self, worker: str, kb_per_s: int) -> NetworkFault:
        """Limit `worker`'s traffic to `kb_per_s` KB/s in each direction."""
        return self.begin("bandwidth", worker, rate_kb=kb_per_s)

    def reset(self, worker: str, timeout_ms: int = 0) -> NetworkFault:
        """Answer `worker`'s next write to its backend with an RST after `timeout_ms`."""
        return self.begin("reset", worker, timeout_ms=timeout_ms)

    def slice(self, worker: str, average_size: int = 16, size_variation: int = 8, delay_us: int = 1000) -> NetworkFault:
        """Cut `worker`'s traffic into pieces of about `average_size` bytes, `delay_us` apart."""
        return self.begin("slice", worker, average_size=average_size, size_variation=size_variation,
                          delay_us=delay_us)


class NetworkFault(Protocol):
    """A fault in place (a network fault, or any other `ctx.begin` applied), for `ctx.heal`."""

    id: str


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    doc: str
    run: Callable[[Context], None]
    faults: tuple[str, ...] = ()  # the fault kinds it may inject
    deadline_s: float | None = None  # its own deadline, when the default (from the contract) is too short
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> its choices, the default first
    requires: tuple[str, ...] = ()  # what it needs of the contract (REQUIREMENTS), else it is skipped

    def unmet(self, contract: Contract) -> str | None:
        """Why this scenario cannot run against `contract` (a skipped run's reason), or None."""
        reasons = [reason for need in self.requires if (reason := REQUIREMENTS[need][0](contract)) is not None]
        return f"scenario {self.name} is skipped: " + "; and ".join(reasons) if reasons else None

    @property
    def all_params(self) -> dict[str, tuple[str, ...]]:
        """Its own PARAMS and the shared ones (SHARED_PARAMS) it does not redeclare."""
        return {**SHARED_PARAMS, **self.params}

    def with_params(self, overrides: dict[str, str]) -> dict[str, str]:
        """Its parameters (its own and the shared ones), with `-s key=value` overrides checked against the
        declared choices."""
        params = self.all_params
        chosen = {name: choices[0] for name, choices in params.items()}
        for key, value in overrides.items():
            choices = params.get(key)
            if choices is None:
                known = ", ".join(sorted(params))
                raise ConfigError(f"Scenario {self.name} has no parameter {key!r}; its parameters are: {known}.")
            if value not in choices:
                raise ConfigError(f"Scenario {self.name}: parameter {key}={value!r} is not one of "
                                  f"{', '.join(choices)}.")
            chosen[key] = value
        return chosen


def load_scenario(path: Path) -> Scenario:
    check_name(path.stem, "scenario name (its file's name)", f"Rename {path} to a plain file name.")
    module = load_module(path, f"chaos_scenario_{path.stem}", "scenario")
    run = getattr(module, "run", None)
    if not callable(run):
        raise ConfigError(f"Scenario {path} defines no run(ctx) function; a scenario needs one.")
    faults = getattr(module, "FAULTS", None)
    if not isinstance(faults, (tuple, list)) or not all(isinstance(kind, str) for kind in faults):
        raise ConfigError(f"Scenario {path}: FAULTS = {faults!r}; expected a module-level tuple of the fault kinds "
                          "it injects, e.g. FAULTS = (\"kill\", \"backend_restart\"), or FAULTS = () for none.")
    deadline = getattr(module, "DEADLINE_S", None)
    if deadline is not None and not is_seconds(deadline):
        raise ConfigError(f"Scenario {path}: DEADLINE_S = {deadline!r}; expected {SECONDS} (the longest the run "
                          "may take).")
    params = getattr(module, "PARAMS", {})
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, (tuple, list)) and v and all(isinstance(c, str) for c in v)
            for k, v in params.items()):
        raise ConfigError(f"Scenario {path}: PARAMS = {params!r}; expected a dict of parameter names to their "
                          "choices (strings, the default first), e.g. PARAMS = {'mode': ('disable', 'blackhole')}.")
    requires = getattr(module, "REQUIRES", ())
    if not isinstance(requires, (tuple, list)) or not all(isinstance(need, str) and need in REQUIREMENTS
                                                          for need in requires):
        raise ConfigError(f"Scenario {path}: REQUIRES = {requires!r}; expected a tuple of what it needs of the "
                          f"contract, among {', '.join(REQUIREMENTS)} (or leave it out).")
    return Scenario(path.stem, path.resolve(), (module.__doc__ or "").strip(), run, tuple(faults),
                    None if deadline is None else float(deadline), {k: tuple(v) for k, v in params.items()},
                    tuple(requires))

