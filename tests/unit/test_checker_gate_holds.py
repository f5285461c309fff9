"""A gate holding a worker's probe freezes the thread that sent it, for as long as the scenario keeps it
(issue 23: exploration found both rules below giving false violations on pg_lease's default, when a
schedule's gate held a worker for seconds). Each rule has its near miss, which must still be caught."""

from __future__ import annotations

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from tests.history import PID, History
from tests.unit.test_checker_anomalies import LEASE

W2_PID = 4343


def kinds(verdict: Verdict) -> set[str]:
    return {v.kind for v in verdict.violations}


def released(h: History, gate: str, job: str, *, dt: float) -> History:
    return h.record(events.gate_released(gate, job), dt=dt)


def held_at_claim(dt: float) -> History:
    """w1 claims `a`, a gate holds it there for `dt` seconds, then it extends, works and acks."""
    h = History(LEASE).start("w1").enqueue("a").armed("g1", "after:claim job=a", "a")
    h.claim("a", "w1", "t1", pid=PID).matched("g1", "a", "w1", events.CLAIM)
    return released(h, "g1", "a", dt=dt).heartbeat("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1")


def test_a_gate_holding_the_owner_explains_its_heartbeat_gap() -> None:
    verdict = judge(held_at_claim(3.0).snapshot(a="done").events)
    assert "heartbeat_gap" not in kinds(verdict), [v.message for v in verdict.violations]


def test_a_gap_after_the_gate_let_go_is_still_a_gap() -> None:
    h = held_at_claim(0.1)
    h.heartbeat("a", "w1", "t1", dt=1.6)
    verdict = judge(h.effect("a", "w1", "t1").snapshot(a="done").events)
    assert "heartbeat_gap" in kinds(verdict)


def test_a_reclaim_from_an_owner_a_gate_holds_is_not_premature() -> None:
    h = History(LEASE).start("w1").start("w2", W2_PID).enqueue("a").armed("g1", "after:claim job=a", "a")
    h.claim("a", "w1", "t1", pid=PID).matched("g1", "a", "w1", events.CLAIM)
    h.claim("a", "w2", "t2", pid=W2_PID, dt=1.5).effect("a", "w2", "t2").ack("a", "w2", "t2")
    released(h, "g1", "a", dt=0.01).abandon("a", "w1", "t1", reason="lost")
    verdict = judge(h.snapshot(a="done").events)
    assert "premature_reclaim" not in kinds(verdict), [v.message for v in verdict.violations]


def test_a_reclaim_from_an_owner_never_held_is_still_premature() -> None:
    h = History(LEASE).start("w1").start("w2", W2_PID).enqueue("a").armed("g1", "after:claim job=a", "a")
    h.claim("a", "w2", "t0", pid=W2_PID).matched("g1", "a", "w2", events.CLAIM)
    released(h, "g1", "a", dt=0.01).effect("a", "w2", "t0").ack("a", "w2", "t0").enqueue("b")
    h.claim("b", "w1", "t1", pid=PID).heartbeat("b", "w1", "t1").claim("b", "w2", "t2", pid=W2_PID, dt=0.3)
    h.effect("b", "w2", "t2").ack("b", "w2", "t2").abandon("b", "w1", "t1", reason="lost")
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert "premature_reclaim" in kinds(verdict)


def test_a_job_no_worker_was_free_to_take_is_unsettled_not_stuck() -> None:
    """The only worker is held at a gate with `a` while `b` waits (a schedule whose step never came): the
    run ends with `b` pending, which proves nothing."""
    h = History(LEASE).start("w1").enqueue("a", "b").armed("g1", "after:claim job=a", "a")
    h.claim("a", "w1", "t1", pid=PID).matched("g1", "a", "w1", events.CLAIM)
    h.final_snapshot({"a": {"state": "claimed", "owner": "w1"}, "b": {"state": "pending"}}, 2.5)
    verdict = judge(h.events)
    assert verdict.verdict == "inconclusive" and not verdict.violations, [v.message for v in verdict.violations]
    assert any("b was still pending at the end, but no worker was free to take it" in n for n in verdict.notes)


def test_a_job_pending_while_a_worker_was_free_is_stuck() -> None:
    h = History(LEASE).start("w1").enqueue("a", "b").claim("a", "w1", "t1", pid=PID)
    h.effect("a", "w1", "t1").ack("a", "w1", "t1")
    verdict = judge(h.final_snapshot({"a": {"state": "done"}, "b": {"state": "pending"}}, 2.5).events)
    assert kinds(verdict) == {"stuck"}
