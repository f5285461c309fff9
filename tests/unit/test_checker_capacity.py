"""A recovery bound promises how soon a lost job is available again: the time every live worker was busy
with a job of its own does not count against the queue (issue 23: exploration found pg_lease's default
failing recovery_bound_exceeded when four long jobs kept three workers busy)."""

from __future__ import annotations

from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE


def kinds(verdict: Verdict) -> set[str]:
    return {v.kind for v in verdict.violations}


def busy_survivor(idle_spare: bool) -> History:
    """w2 dies holding `a` while w1 is busy with the long `b` for 3 s; w1 then takes `a` (and with
    `idle_spare`, an idle w3 was alive the whole time and did not)."""
    h = History(LEASE).start("w1", 11).start("w2", 12).enqueue("a", "b")
    if idle_spare:
        h.start("w3", 13)
    h.claim("b", "w1", "tb", pid=11).claim("a", "w2", "ta", pid=12).kill("w2")
    h.heartbeat("b", "w1", "tb", dt=0.9).heartbeat("b", "w1", "tb", dt=0.9).heartbeat("b", "w1", "tb", dt=0.9)
    h.effect("b", "w1", "tb", dt=0.3).ack("b", "w1", "tb")
    return h.execute("a", "w1", dt=0.01)


def test_a_recovery_while_every_live_worker_was_busy_is_not_past_the_bound() -> None:
    verdict = judge(busy_survivor(idle_spare=False).snapshot(a="done", b="done").events)
    assert "recovery_bound_exceeded" not in kinds(verdict), [v.message for v in verdict.violations]
    assert verdict.recovery["max_s"] > 2.0  # still measured as it was


def test_a_recovery_past_the_bound_with_an_idle_worker_alive_is_a_violation() -> None:
    verdict = judge(busy_survivor(idle_spare=True).snapshot(a="done", b="done").events)
    assert "recovery_bound_exceeded" in kinds(verdict)
