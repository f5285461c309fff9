"""The schedule language: a workload (jobs, long jobs, workers) and a list of event-keyed steps.

A step is keyed to an event, never to a time: "when the 2nd claim of job 1 happens, stop its owner until
another worker claims the job". That means the same thing on every run of real processes, which is what
makes a found schedule replayable. A schedule is plain data (`to_dict`/`from_dict`), so it serialises
into the scenario file that replays it and into Hypothesis's example database.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from chaos import events
from chaos.errors import ConfigError
from chaos.faults import KINDS

# Gate points, the earliest of a job's life first (so shrinking moves a step earlier).
TRIGGERS = ("after:claim", "after:effect", "before:ack")
Role = Literal["kills", "holds", "restarts"]
ROLES: tuple[Role, ...] = ("kills", "holds", "restarts")  # the order schedules draw (and shrink toward) faults in


def role(fault: str) -> Role | None:
    """What a step does with a fault kind, from what the kind says of itself (chaos.faults), so any kind
    registered, a plugin's included, is scheduled without an edit here:

    - kills: its victim dies (it ends the executions it reaches, and nothing starts it again); the step may
      start a fresh worker after it;
    - holds: it lasts on one worker (it heals) and takes its job: held (frozen or cut off) until another
      worker claims the job, at most the recovery deadline, then let go on;
    - restarts: it takes its target down and brings it (a worker, or the server) back at once.

    Other kinds (a clock shift, a slow link, a fault on every worker at once) are not scheduled."""
    kind = KINDS.get(fault)
    if kind is None or kind.inject is None:
        return None
    if kind.restarts:
        return "restarts"
    if kind.ends_executions and kind.reach == "target":
        return "kills"
    if kind.heal is not None and kind.takes_owner and kind.reach == "target":
        return "holds"
    return None


def victim(fault: str, owner: str) -> str:
    """Whom a step applies `fault` to: the owner its gate holds, or the server for a kind that reaches
    every worker at once (a backend restart)."""
    return owner if KINDS[fault].reach == "target" else events.BACKEND


def faults() -> tuple[str, ...]:
    """Every fault kind a schedule may use, the killing ones first, then the holding, then the restarting."""
    return tuple(name for wanted in ROLES for name in KINDS if role(name) == wanted)


MAX_JOBS, MAX_WORKERS, MAX_STEPS, MAX_NTH = 12, 6, 4, 2


@dataclass(frozen=True)
class Step:
    """When `trigger` (a gate point) happens for the `nth` time to job number `job` (1-based), apply
    `fault` to the worker holding it (or to the server, for a fault that reaches every worker)."""

    trigger: str
    job: int
    fault: str
    nth: int = 1
    replace: bool = False  # killing faults only: start a fresh worker after it

    @classmethod
    def of(cls, trigger: str, job: int, fault: str, nth: int = 1, replace: bool = False) -> Step:
        """One spelling per step: a setting its fault ignores takes its default."""
        return cls(trigger, job, fault, nth, replace and role(fault) == "kills")

    def describe(self) -> str:
        ordinal = {1: "1st", 2: "2nd", 3: "3rd"}.get(self.nth, f"{self.nth}th")
        what = KINDS[self.fault].says("its owner")
        if role(self.fault) == "holds":
            what += " until another worker claims the job"
        if role(self.fault) == "kills":
            what += ", then start a fresh worker" if self.replace else " (a fresh one starts if none is left)"
        return f"at the {ordinal} {self.trigger} of job {self.job}, {what}"


@dataclass(frozen=True)
class Schedule:
    """`jobs` jobs (the first `long_jobs` run past the ownership deadline), `workers` workers started at
    once, then each step in order."""

    jobs: int
    workers: int
    steps: tuple[Step, ...] = ()
    long_jobs: int = 0

    @property
    def faults(self) -> tuple[str, ...]:
        """The fault kinds it injects, as a scenario's FAULTS declares them."""
        return tuple(sorted({step.fault for step in self.steps}))

    @property
    def size(self) -> tuple[int, int, int]:
        """(steps, jobs, workers started in all): what "smaller" means when comparing two schedules."""
        return len(self.steps), self.jobs, self.workers + self.replacements

    @property
    def replacements(self) -> int:
        """Fresh workers started after kills: one per step asking for it, and one after each kill that
        leaves no worker alive (a queue cannot be asked to recover a job with nobody to run it). The
        count is the same in whatever order the steps' events come."""
        asked = sum(step.replace for step in self.steps)
        unreplaced = sum(role(step.fault) == "kills" and not step.replace for step in self.steps)
        return asked + max(0, unreplaced - (self.workers - 1))

    def no_larger_than(self, other: tuple[int, int, int]) -> bool:
        return all(mine <= theirs for mine, theirs in zip(self.size, other, strict=True))

    def describe(self) -> list[str]:
        long = f", {self.long_jobs} of them running past the ownership deadline" if self.long_jobs else ""
        lines = [f"{self.jobs} job(s){long}; {self.workers} worker(s) started at once"]
        lines += [f"step {i}: {step.describe()}" for i, step in enumerate(self.steps, 1)]
        return lines or ["no fault"]

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "long_jobs": self.long_jobs, "workers": self.workers,
                "steps": [{"trigger": s.trigger, "job": s.job, "nth": s.nth, "fault": s.fault,
                           **({"replace": s.replace} if role(s.fault) == "kills" else {})} for s in self.steps]}

    def digest(self) -> str:
        return hashlib.sha1(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:10]

    @classmethod
    def from_dict(cls, raw: Any) -> Schedule:
        """A schedule from its plain form, every field checked (a hand-edited found scenario is user input)."""
        if not isinstance(raw, dict):
            raise ConfigError(f"A schedule must be a dict with jobs, workers and steps; got {raw!r}.")
        jobs = _count(raw, "jobs", 1, MAX_JOBS)
        long_jobs = _count(raw, "long_jobs", 0, jobs, default=0)
        workers = _count(raw, "workers", 1, MAX_WORKERS)
        steps = raw.get("steps", [])
        if not isinstance(steps, list) or len(steps) > MAX_STEPS:
            raise ConfigError(f"A schedule's steps must be a list of at most {MAX_STEPS}; got {steps!r}.")
        return cls(jobs, workers, tuple(_step(step, jobs) for step in steps), long_jobs)


def _count(raw: dict[str, Any], key: str, low: int, high: int, default: int | None = None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"A schedule's {key} must be a whole number from {low} to {high}; got {value!r}.")
    return value


def _step(raw: Any, jobs: int) -> Step:
    if not isinstance(raw, dict):
        raise ConfigError(f"A schedule step must be a dict with trigger, job and fault; got {raw!r}.")
    trigger, fault = raw.get("trigger"), raw.get("fault")
    if trigger not in TRIGGERS:
        raise ConfigError(f"A schedule step's trigger must be one of {', '.join(TRIGGERS)}; got {trigger!r}.")
    if not isinstance(fault, str) or role(fault) is None:
        raise ConfigError(f"A schedule step's fault must be one of {', '.join(faults())}; got {fault!r}.")
    replace = raw.get("replace", False)
    if not isinstance(replace, bool):
        raise ConfigError(f"A schedule step's replace must be true or false; got {replace!r}.")
    return Step.of(str(trigger), _count(raw, "job", 1, jobs), str(fault), _count(raw, "nth", 1, MAX_NTH, default=1),
                   replace)
