"""The search's bookkeeping, with real Hypothesis and a runner whose verdict is a rule of the schedule (the
real runs are tests/integration/test_explore.py's): no schedule is run twice, in one search or across
the shards of one exploration, a small budget is spent on fresh schedules, and a violation is shrunk."""

from __future__ import annotations

from pathlib import Path

from chaos.explore.runs import Attempt, ScheduleRunner, Variant
from chaos.explore.schedule import Schedule, Step, faults
from chaos.explore.search import Budget, Search, SearchLog
from chaos.explore.shared import RUNNING, SharedRuns
from chaos.explore.windows import Reading


class RuledRunner(ScheduleRunner):
    """A schedule "violates" `lost` when it kills an owner after its effect; every call is counted."""

    def __init__(self, home: Path) -> None:
        super().__init__(Variant("rule"), home)
        self.runs: list[Schedule] = []

    def attempt(self, schedule: Schedule, number: int) -> Attempt:
        self.runs.append(schedule)
        lost = any(s.fault == "kill" and s.trigger == "after:effect" for s in schedule.steps)
        return Attempt(schedule, "fail" if lost else "pass", ("lost",) if lost else (), Reading(), None, 0.0)


def search(tmp_path: Path, runs: int, seed: int = 1, shared: SharedRuns | None = None,
           mode: str = "random") -> tuple[RuledRunner, SearchLog]:
    runner = RuledRunner(tmp_path)
    log = Search(runner, faults(), Budget(runs), mode, seed, None, lambda line: None, shared).run()
    return runner, log


def digests(schedules: list[Schedule]) -> list[str]:
    return [schedule.digest() for schedule in schedules]


def test_a_search_runs_no_schedule_twice_and_shrinks_what_it_found(tmp_path: Path) -> None:
    runner, log = search(tmp_path, 60)
    assert len(set(digests(runner.runs))) == len(runner.runs) == len(log.attempts)
    assert log.smallest["lost"].schedule == Schedule(1, 2, (Step.of("after:effect", 1, "kill"),))


def test_a_small_budget_is_spent_on_fresh_schedules(tmp_path: Path) -> None:
    for mode in ("guided", "random"):  # every round of a search starts from the simplest schedule
        runner, log = search(tmp_path / mode, 4, mode=mode)
        assert len(set(digests(runner.runs))) == 4, (mode, log.stopped_by)
        assert "budget of 4 runs" in log.stopped_by


def test_shards_sharing_their_runs_never_run_the_same_schedule(tmp_path: Path) -> None:
    shared = SharedRuns(tmp_path / "shared")
    shared.clear()
    first, _ = search(tmp_path / "1", 12, seed=1, shared=shared)
    second, log = search(tmp_path / "2", 12, seed=2, shared=shared)
    assert not set(digests(first.runs)) & set(digests(second.runs))
    assert len(second.runs) == 12 and len(log.attempts) == 12  # what the first ran took none of its budget


def test_a_claim_answers_with_the_other_shards_run_or_that_it_is_under_way(tmp_path: Path) -> None:
    one, other = SharedRuns(tmp_path), SharedRuns(tmp_path)
    one.clear()
    schedule = Schedule(2, 2, (Step.of("after:claim", 1, "stop"),), 1)
    assert one.claim(schedule.digest()) is None
    assert other.claim(schedule.digest()) is RUNNING
    done = Attempt(schedule, "fail", ("lost",), Reading({"redelivered"}, 0.5, 2.0), "runs/x", 3.2, "")
    one.record(done)
    assert other.claim(schedule.digest()) == done
    one.clear()
    assert other.claim(schedule.digest()) is None
