"""A fault held until a named condition that ended on its deadline instead exercised only part of its
scenario (issue 34, item 3): inconclusive, naming the premise and what the queue did instead, unless a
violation is proven anyway."""

from __future__ import annotations

from chaos.check.checker import judge
from chaos.contract import Contract
from tests.history import History

LEASED = Contract(recovery_bound_s=10.0, lease_s=2.0, heartbeat_s=0.5)
UNTIL = "a claim probe of a from a worker other than w1"


def stopped_owner(*, held: bool, premise: bool = True, until: str | None = UNTIL, spare_busy: bool = True) -> History:
    """w1 claims a and is stopped until another worker claims it; nobody does (w2 is busy with b meanwhile,
    or with `spare_busy=False` idles), and after the heal w1 finishes it."""
    h = History(LEASED, faults=["stop"]).enqueue("a", "b").start("w1").start("w2", 4343).claim("a", "w1")
    if spare_busy:
        h.claim("b", "w2")
    h.stop("w1", until=until, until_job="a", premise=premise).heal("w1", dt=12.0, held=held)
    h.effect("a", "w1").ack("a", "w1")
    return h.effect("b", "w2").ack("b", "w2") if spare_busy else h.execute("b", "w2")


def test_a_premise_that_never_held_makes_the_run_inconclusive_naming_it() -> None:
    verdict = judge(stopped_owner(held=False).snapshot(a="done", b="done").events)
    assert verdict.verdict == "inconclusive", verdict.notes
    (note,) = [n for n in verdict.notes if n.startswith("premise not held")]
    assert UNTIL in note and "after 12.0s" in note, note
    assert "nobody touched a during the stop" in note and "after the heal effect by w1 at +" in note, note
    assert "ack by w1" in note, note


def test_what_the_queue_did_instead_counts_the_probes_during_the_fault() -> None:
    h = History(LEASED, faults=["stop"]).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1")
    h.stop("w1", until=UNTIL, until_job="a").heartbeat("a", "w1").heartbeat("a", "w1")  # a sidecar renews it
    verdict = judge(h.heal("w1", held=False).effect("a", "w1").ack("a", "w1").snapshot(a="done").events)
    (note,) = [n for n in verdict.notes if n.startswith("premise not held")]
    assert "during the stop a saw heartbeat by w1 x2" in note, note


def test_a_premise_that_held_is_no_note() -> None:
    verdict = judge(stopped_owner(held=True).snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", verdict.notes
    assert not any(n.startswith("premise not held") for n in verdict.notes), verdict.notes


def test_a_condition_the_scenario_says_is_no_premise_for_this_contract_is_no_note() -> None:
    verdict = judge(stopped_owner(held=False, premise=False).snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", verdict.notes


def test_an_unnamed_condition_makes_a_timed_fault() -> None:
    verdict = judge(stopped_owner(held=False, until=None).snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", verdict.notes


def test_a_violation_proven_anyway_still_fails() -> None:
    h = History(LEASED, faults=["stop"]).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1")
    h.stop("w1", until=UNTIL, until_job="a").heal("w1", dt=12.0, held=False)
    verdict = judge(h.abandon("a", "w1").snapshot(a="absent").events)  # gone, never effected: lost
    assert verdict.verdict == "fail", verdict.notes
    assert [v.kind for v in verdict.violations] == ["lost"]


def test_an_unmet_premise_with_a_worker_free_throughout_is_the_reclaim_the_lease_owed() -> None:
    # nobody took a for the whole stop although w2 was free: the lease rule proves a violation anyway
    verdict = judge(stopped_owner(held=False, spare_busy=False).snapshot(a="done", b="done").events)
    assert verdict.verdict == "fail", verdict.notes
    assert [v.kind for v in verdict.violations] == ["recovery_bound_exceeded"]
