"""A greedy shrinker for the violations Hypothesis did not shrink: Hypothesis shrinks the first violation
it finds, and a run often shows others too (pg_lifeline's first failing run shows three kinds). Each
other kind's smallest schedule is cut one change at a time, largest cuts first, keeping a cut whenever
its real run still shows the violation, until no cut does or the budget is spent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from chaos.explore.schedule import TRIGGERS, Schedule, Step


def smaller(schedule: Schedule) -> Iterator[Schedule]:
    """Every schedule one change smaller, the largest cuts first: a step dropped, one job (or all but
    one), a long job, a worker; then a step's occurrence, trigger or replacement made earlier or none."""
    steps = schedule.steps
    for index in range(len(steps)):
        yield replace(schedule, steps=steps[:index] + steps[index + 1:])
    for jobs in sorted({1, schedule.jobs - 1}):
        if 1 <= jobs < schedule.jobs:
            yield Schedule(jobs, schedule.workers, tuple(replace(s, job=min(s.job, jobs)) for s in steps),
                           min(schedule.long_jobs, jobs))
    if schedule.long_jobs:
        yield replace(schedule, long_jobs=schedule.long_jobs - 1)
    if schedule.workers > 1:
        yield replace(schedule, workers=schedule.workers - 1)
    for index, step in enumerate(steps):
        for earlier in _earlier(step):
            yield replace(schedule, steps=steps[:index] + (earlier,) + steps[index + 1:])


def _earlier(step: Step) -> Iterator[Step]:
    if step.nth > 1:
        yield replace(step, nth=step.nth - 1)
    position = TRIGGERS.index(step.trigger)
    if position:
        yield replace(step, trigger=TRIGGERS[position - 1])
    if step.replace:
        yield replace(step, replace=False)


def shrink(schedule: Schedule, shows: Callable[[Schedule], bool]) -> Schedule:
    """The smallest schedule reached from `schedule` by cuts that each still `shows` the violation."""
    best = schedule
    while True:
        for candidate in smaller(best):
            if shows(candidate):
                best = candidate
                break
        else:
            return best
