"""The search: Hypothesis draws schedules, each runs as a real `chaos run` of the target (its own servers,
workers and proxies), and a violation is raised for Hypothesis to shrink. Every run is recorded here as
well, so the smallest schedule that showed each violation survives whatever stops the search: its budget
of runs or seconds, Ctrl-C, or Hypothesis finding that a shrunk schedule no longer fails (flaky).

Guided search tells Hypothesis (`hypothesis.target`) how long the run held an owner, how long two
executions of a job overlapped, and how many windows it reached, and lets it climb them; random search
draws from the same strategy without that feedback.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, reject, seed, settings, target
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import Flaky, Unsatisfiable

from chaos.errors import HarnessError
from chaos.explore.runs import Attempt, ScheduleRunner
from chaos.explore.schedule import Schedule
from chaos.explore.shared import Running, SharedRuns
from chaos.explore.shrink import shrink
from chaos.explore.strategy import schedules

MODES = ("guided", "random")
INTERRUPTED = "an interrupt (Ctrl-C or SIGTERM)"
ROUND_SEED_STEP = 7919  # a later round of the search draws from another seed


class _OutOfBudget(BaseException):
    """The search's runs or seconds are spent: it ends at once (Hypothesis lets a BaseException through)."""


class _Crashed(BaseException):
    """The explorer's own code failed: never a finding for Hypothesis to shrink, the search's end."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class Violated(Exception):
    """A run violated the contract; one subclass per violation kind, so that Hypothesis shrinks each on its own."""


_KINDS: dict[str, type[Violated]] = {}


def _violated(kind: str) -> type[Violated]:
    if kind not in _KINDS:
        _KINDS[kind] = type(f"Violated_{kind}", (Violated,), {})
    return _KINDS[kind]


@dataclass(frozen=True)
class Budget:
    runs: int
    seconds: float | None = None


@dataclass
class SearchLog:
    """Every schedule run, in order; the first and the smallest schedule to show each violation."""

    attempts: list[Attempt] = field(default_factory=list)
    elapsed: list[float] = field(default_factory=list)  # seconds into the search each attempt ended
    first: dict[str, tuple[int, float]] = field(default_factory=dict)  # violation -> (runs, seconds) until found
    smallest: dict[str, Attempt] = field(default_factory=dict)
    stopped_by: str = "the end of its search"

    def add(self, attempt: Attempt, elapsed_s: float) -> None:
        self.attempts.append(attempt)
        self.elapsed.append(elapsed_s)
        for kind in attempt.violations:
            self.first.setdefault(kind, (len(self.attempts), elapsed_s))
            best = self.smallest.get(kind)
            if best is None or _order(attempt.schedule) < _order(best.schedule):
                self.smallest[kind] = attempt

    def windows(self) -> Counter[str]:
        return Counter(w for a in self.attempts for w in a.windows)

    def verdicts(self) -> Counter[str]:
        return Counter(a.verdict for a in self.attempts)


def _order(schedule: Schedule) -> tuple[int, tuple[int, int, int], int]:
    return sum(schedule.size), schedule.size, schedule.long_jobs


class Search:
    def __init__(self, runner: ScheduleRunner, faults: tuple[str, ...], budget: Budget, mode: str, seed_: int,
                 database: Path | None, say: Callable[[str], None], shared: SharedRuns | None = None) -> None:
        self.runner = runner
        self.faults = faults
        self.budget = budget
        self.mode = mode
        self.seed = seed_
        self.database = database
        self.say = say
        self.shared = shared  # the runs of the other shards of one -j exploration
        self.log = SearchLog()
        self._seen: dict[str, Attempt] = {}
        self._began = 0.0
        self._current: str | None = None  # the kind this round's Hypothesis search is shrinking
        self._done: set[str] = set()  # the kinds shrunk already (by a round, or greedily)

    def run(self) -> SearchLog:
        """Rounds of search until the budget is spent (or a round draws no schedule not run already): each
        round's first new violation ends it and is shrunk by Hypothesis; any other kind its runs showed is
        then shrunk greedily; the next round, from another seed, looks for kinds not seen yet."""
        self._began = time.monotonic()
        try:
            round_ = 0
            while True:
                before = len(self.log.attempts)
                self._round(round_)
                self._shrink_the_rest()
                if len(self.log.attempts) == before:
                    break
                round_ += 1
            self.log.stopped_by = "the end of its search (its last round drew no schedule not run already)"
        except _OutOfBudget as out:
            self.log.stopped_by = str(out)
        except _Crashed as crashed:
            raise HarnessError(f"chaos explore could not run a schedule: {crashed.cause!r}") from crashed.cause
        except KeyboardInterrupt:  # the run under way was stopped and cleaned up; what was found is kept
            self.log.stopped_by = INTERRUPTED
        return self.log

    def _round(self, round_: int) -> None:
        """One Hypothesis search, ended by its examples or by a new violation, which it shrinks. Guided
        search leaves half its runs to Hypothesis's target phase, which climbs the measures `_example`
        reports; random search spends them all on fresh draws. Only the first round keeps its failure in
        the example database (a later round's would see the earlier kinds as passing and drop them)."""
        phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]
        if self.mode == "guided":
            phases.insert(3, Phase.target)
        database: ExampleDatabase | None = (DirectoryBasedExampleDatabase(str(self.database))
                                            if self.database is not None and round_ == 0 else None)
        left = max(1, self.budget.runs - len(self.log.attempts))
        config = settings(max_examples=max(1, left // 2) if self.mode == "guided" else left, deadline=None,
                          database=database, phases=phases, suppress_health_check=list(HealthCheck),
                          verbosity=Verbosity.quiet, print_blob=False, report_multiple_bugs=False)

        @config
        @seed(self.seed + ROUND_SEED_STEP * round_)
        @given(schedules(self.faults))
        def explore(schedule: Schedule) -> None:
            self._example(schedule)

        self._current = None
        try:
            explore()
        except (Violated, ExceptionGroup, Flaky):  # the violations Hypothesis re-raises are in the log already
            pass
        except Unsatisfiable:  # every schedule it drew had been run already: the round ends with nothing new
            pass
        if self._current is not None:
            self._done.add(self._current)

    def _shrink_the_rest(self) -> None:
        """Each violation seen that no round shrank (a run showed it beside the one Hypothesis shrank),
        shrunk greedily with what is left of the budget, in the order they were first seen."""
        for kind in sorted(self.log.first, key=lambda k: self.log.first[k]):
            if kind not in self._done:
                shrink(self.log.smallest[kind].schedule, self._shows(kind))
                self._done.add(kind)

    def _shows(self, kind: str) -> Callable[[Schedule], bool]:
        def shows(schedule: Schedule) -> bool:
            attempt = self._attempt(schedule)
            return isinstance(attempt, Attempt) and kind in attempt.violations
        return shows

    def _attempt(self, schedule: Schedule) -> Attempt | Running:
        """The schedule's run: this search's or another shard's if it was made already (or RUNNING while
        another shard makes it), else made now, within the budget, logged and shared."""
        digest = schedule.digest()
        known = self._seen.get(digest)
        if known is not None:
            return known
        self._check_budget()
        other = self.shared.claim(digest) if self.shared is not None else None
        if isinstance(other, Attempt):
            self._seen[digest] = other
        if other is not None:
            return other
        try:
            attempt = self.runner.attempt(schedule, len(self.log.attempts) + 1)
        except Exception as exc:  # noqa: BLE001 - handed on as the search's end, never as a finding
            raise _Crashed(exc) from exc
        self._seen[digest] = attempt
        self.log.add(attempt, time.monotonic() - self._began)
        self.say(attempt.line(len(self.log.attempts)))
        if self.shared is not None:
            self.shared.record(attempt)
        return attempt

    def _example(self, schedule: Schedule) -> None:
        """One schedule Hypothesis drew. Until the round's first failure, a schedule run already (here, in
        an earlier round, or by another shard) is rejected, so that it takes none of the round's examples
        and Hypothesis draws a fresh one instead; while a failure is shrunk, the known answer is given."""
        runs = len(self.log.attempts)
        attempt = self._attempt(schedule)
        if isinstance(attempt, Running) or (self._current is None and len(self.log.attempts) == runs):
            reject()
        if self.mode == "guided" and attempt.verdict in ("pass", "fail"):  # a run that proved nothing steers nothing
            target(attempt.reading.exposure_s, label="owner held (s)")
            target(attempt.reading.overlap_s, label="executions overlapping (s)")
            target(float(len(attempt.windows)), label="windows reached")
        new = [kind for kind in attempt.violations if kind not in self._done]
        if new:  # the round's first failure's kind is the one Hypothesis shrinks
            self._current = self._current or new[0]
            raise _violated(new[0])(f"{new[0]}: {'; '.join(schedule.describe())}")

    def _check_budget(self) -> None:
        if len(self.log.attempts) >= self.budget.runs:
            raise _OutOfBudget(f"its budget of {self.budget.runs} runs")
        seconds = self.budget.seconds
        if seconds is not None and time.monotonic() - self._began >= seconds:
            raise _OutOfBudget(f"its budget of {seconds:.0f} s")

