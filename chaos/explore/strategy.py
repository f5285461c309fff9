"""The Hypothesis strategy of schedules. Its shapes shrink where a reader wants them to: fewer steps, fewer
jobs and workers, no long jobs, the earliest trigger, the 1st occurrence, no replacement worker."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from chaos.explore.schedule import MAX_NTH, TRIGGERS, Schedule, Step

# What the search draws (a written schedule may go further): a long job takes seconds, so at most two; a
# lone worker has nobody to take its job over (a kill of it starts a fresh one anyway), so at least two.
MAX_JOBS, MAX_LONG_JOBS, MIN_WORKERS, MAX_WORKERS, MAX_STEPS = 6, 2, 2, 3, 3


def schedules(faults: Sequence[str]) -> st.SearchStrategy[Schedule]:
    """Schedules whose steps inject only `faults` (those the target can take where it runs)."""
    return _schedules(tuple(faults))


@st.composite
def _schedules(draw: st.DrawFn, faults: tuple[str, ...]) -> Schedule:
    jobs = draw(st.integers(1, MAX_JOBS), label="jobs")
    long_jobs = draw(st.integers(0, min(jobs, MAX_LONG_JOBS)), label="long_jobs")
    workers = draw(st.integers(MIN_WORKERS, MAX_WORKERS), label="workers")
    steps = draw(st.lists(_steps(jobs, long_jobs, faults), max_size=MAX_STEPS if faults else 0), label="steps")
    return Schedule(jobs, workers, tuple(steps), long_jobs)


def _steps(jobs: int, long_jobs: int, faults: tuple[str, ...]) -> st.SearchStrategy[Step]:
    return st.builds(Step.of, trigger=st.sampled_from(TRIGGERS), job=_job(jobs, long_jobs),
                     fault=st.sampled_from(faults), nth=st.integers(1, MAX_NTH),
                     replace=st.booleans())


def _job(jobs: int, long_jobs: int) -> st.SearchStrategy[int]:
    """Any job, or (as often, when there are any) a long one: a fault on a job that outlives its lease is
    what reaches the lease's windows (a stale extension, a reclaim from a live owner), and a uniform draw
    of a job out of six with at most two long would rarely pick one. Shrinks to any job."""
    any_job = st.integers(1, jobs)
    return st.one_of(any_job, st.integers(1, long_jobs)) if long_jobs else any_job
