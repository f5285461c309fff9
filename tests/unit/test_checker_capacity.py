"""A recovery bound promises how soon a lost job is available again: the time every live worker was busy
with a job of its own does not count against the queue (issue 23: exploration found pg_lease's default
failing recovery_bound_exceeded when four long jobs kept three workers busy)."""

from __future__ import annotations

from chaos import events
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


def partitioned_survivor(healed_after_s: float) -> History:
    """w1 gives `a` up when a partition cuts it off, while w2 is busy with `b` for 3 s; the partition
    heals after `healed_after_s`, and w1 takes `a` back 3 s after it lost it."""
    h = History(LEASE).start("w1", 11).start("w2", 12).enqueue("a", "b")
    h.claim("b", "w2", "tb", pid=12).claim("a", "w1", "ta", pid=11).partition("w1")
    h.abandon("a", "w1", "ta", reason="lost")
    h.heal("w1", dt=healed_after_s)
    h.heartbeat("b", "w2", "tb", dt=2.9 - healed_after_s).effect("b", "w2", "tb").ack("b", "w2", "tb")
    return h.execute("a", "w1", dt=0.1)


def test_a_partitioned_worker_is_no_worker_free_to_recover_a_job() -> None:
    verdict = judge(partitioned_survivor(2.8).snapshot(a="done", b="done").events)
    assert "recovery_bound_exceeded" not in kinds(verdict), [v.message for v in verdict.violations]


def test_once_its_partition_heals_the_worker_is_free_again() -> None:
    verdict = judge(partitioned_survivor(0.3).snapshot(a="done", b="done").events)
    assert "recovery_bound_exceeded" in kinds(verdict)


def only_worker_gone(expected: bool) -> History:
    """The only worker dies holding `a`: killed by the suite (`expected`), or crashed on its own."""
    h = History(LEASE).start("w1", 11).enqueue("a").claim("a", "w1", "ta", pid=11)
    if expected:
        return h.kill("w1")
    return h.record(events.process_exit("w1", 11, "worker", 1, expected=False))


def test_a_worker_that_crashed_on_its_own_still_counts_as_free() -> None:
    """pgqueuer's workers exit when a backend restart breaks their connection: the queue's own failure
    to keep working, so its job is stuck (the known answer), not excused for want of a worker."""
    verdict = judge(only_worker_gone(expected=False).snapshot(a="claimed").events)
    assert kinds(verdict) == {"stuck"}


def test_a_job_whose_only_worker_the_suite_killed_is_unsettled() -> None:
    verdict = judge(only_worker_gone(expected=True).snapshot(a="claimed").events)
    assert verdict.verdict == "inconclusive" and not verdict.violations
