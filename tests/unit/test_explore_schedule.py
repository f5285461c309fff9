"""The schedule language of `chaos explore`: a schedule survives its plain form and the scenario file it is
written into, a hand-edited schedule is checked field by field, and its size counts every worker it starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.errors import ConfigError
from chaos.explore.scenario_file import render, write
from chaos.explore.schedule import Schedule, Step, faults, role, victim
from chaos.explore.shrink import shrink, smaller
from chaos.explore.strategy import schedules
from chaos.faults import KINDS
from chaos.faults.base import FaultKind, FaultWorld, Params
from chaos.scenario import load_scenario


@given(schedules(faults()))
def test_a_schedule_survives_its_plain_form(schedule: Schedule) -> None:
    assert Schedule.from_dict(schedule.to_dict()) == schedule
    assert len(schedule.describe()) == len(schedule.steps) + 1


@settings(max_examples=20)
@given(schedules(faults()))
def test_a_written_scenario_carries_its_schedule_and_declares_its_faults(schedule: Schedule) -> None:
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "found_x.py", schedule, "Found by a test.", ["Replay: chaos run ..."])
        scenario = load_scenario(path)
        namespace: dict[str, object] = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - our own output
    assert scenario.faults == schedule.faults
    assert Schedule.from_dict(namespace["SCHEDULE"]) == schedule
    assert scenario.doc.startswith("Found by a test.")


def test_a_docstring_cannot_be_closed_by_what_it_quotes() -> None:
    source = render(Schedule(1, 1), 'Found """ by a \\ test.')
    compile(source, "found.py", "exec")


def test_size_counts_the_fresh_worker_a_kill_of_the_last_one_starts() -> None:
    kill = Step.of("after:claim", 1, "kill")
    assert Schedule(1, 1, (kill,)).size == (1, 1, 2)  # the only worker killed: a fresh one starts
    assert Schedule(1, 2, (kill,)).size == (1, 1, 2)  # one is left: none starts
    assert Schedule(1, 2, (kill, kill)).size == (2, 1, 3)
    assert Schedule(1, 2, (Step.of("after:claim", 1, "kill", replace=True),)).size == (1, 1, 3)
    assert Schedule(1, 2, (Step.of("after:claim", 1, "stop"),)).size == (1, 1, 2)


def test_a_setting_its_fault_ignores_takes_its_default() -> None:
    assert Step.of("after:claim", 1, "stop", replace=True).replace is False


@pytest.mark.parametrize(("raw", "says"), [
    ([], "must be a dict with jobs, workers and steps"),
    ({"jobs": 0, "workers": 1}, "jobs must be a whole number from 1 to"),
    ({"jobs": 1, "workers": True}, "workers must be a whole number"),
    ({"jobs": 2, "long_jobs": 3, "workers": 1}, "long_jobs must be a whole number from 0 to 2"),
    ({"jobs": 1, "workers": 1, "steps": "kill"}, "steps must be a list"),
    ({"jobs": 1, "workers": 1, "steps": [{"trigger": "during:claim", "job": 1, "fault": "kill"}]}, "trigger must be"),
    ({"jobs": 1, "workers": 1, "steps": [{"trigger": "after:claim", "job": 2, "fault": "kill"}]}, "job must be"),
    ({"jobs": 1, "workers": 1, "steps": [{"trigger": "after:claim", "job": 1, "fault": "nuke"}]}, "fault must be"),
    ({"jobs": 1, "workers": 1, "steps": [{"trigger": "after:claim", "job": 1, "fault": "kill",
                                          "replace": "yes"}]}, "replace must be true or false"),
])
def test_a_hand_edited_schedule_is_checked_field_by_field(raw: object, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Schedule.from_dict(raw)


@given(st.data())
def test_the_search_draws_only_the_faults_it_is_given(data: st.DataObject) -> None:
    given = data.draw(st.lists(st.sampled_from(faults()), min_size=1, unique=True))
    schedule = data.draw(schedules(given))
    assert set(schedule.faults) <= set(given)


@given(schedules(faults()))
def test_every_cut_is_a_valid_schedule_no_larger_than_what_it_cut(schedule: Schedule) -> None:
    for candidate in smaller(schedule):
        assert Schedule.from_dict(candidate.to_dict()) == candidate
        assert candidate != schedule and candidate.no_larger_than(schedule.size)


def test_the_greedy_shrinker_keeps_only_what_the_violation_needs() -> None:
    def shows(schedule: Schedule) -> bool:  # a stop of a long job's owner, with a second worker to reclaim it
        return schedule.workers >= 2 and schedule.long_jobs >= 1 and any(
            s.fault == "stop" and s.job <= schedule.long_jobs for s in schedule.steps)

    start = Schedule(5, 3, (Step.of("before:ack", 4, "kill", nth=2, replace=True),
                            Step.of("before:ack", 1, "stop", nth=2),
                            Step.of("after:effect", 2, "backend_restart")), long_jobs=2)
    assert shows(start)
    assert shrink(start, shows) == Schedule(1, 2, (Step.of("after:claim", 1, "stop"),), 1)


def test_the_schedulable_kinds_are_read_off_what_each_kind_says_of_itself() -> None:
    assert faults() == ("kill", "container_kill", "stop", "partition", "pause", "restart", "backend_restart")
    assert [role(kind) for kind in ("clock", "latency", "disconnect", "no_such_kind")] == [None] * 4
    assert victim("backend_restart", "w1") == "backend" and victim("pause", "w1") == "w1"


def test_a_kind_nobody_named_in_explore_is_scheduled_by_its_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    def inject(world: FaultWorld, target: str, params: Params) -> Params:
        return {}

    freeze = FaultKind("freeze", "freeze {worker}", takes_owner=True, inject=inject, heal=inject)
    monkeypatch.setattr(KINDS, "_entries", {**KINDS, "freeze": freeze})
    assert role("freeze") == "holds" and "freeze" in faults()
    step = Schedule.from_dict({"jobs": 1, "workers": 2, "steps": [{"trigger": "after:claim", "job": 1,
                                                                     "fault": "freeze"}]}).steps[0]
    assert step.describe() == ("at the 1st after:claim of job 1, freeze its owner until another worker claims "
                               "the job")
