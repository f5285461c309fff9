"""Verdicts from probes in flight (issue 17): a claim sent before a SIGSTOP or a SIGKILL but committed after
it is judged when it was sent; and the heartbeat gap rule. Each rule has a trigger and a near miss that
must still be caught (or stay silent)."""

from __future__ import annotations

from dataclasses import replace

from chaos import events
from chaos.check.checker import judge
from chaos.check.scan import scan
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from tests.history import PID, History
from tests.unit.test_checker_anomalies import LEASE, LOCK

W2_PID = 4343


def kinds(verdict: Verdict) -> set[str]:
    return {v.kind for v in verdict.violations}


def two_workers(contract: Contract = LEASE) -> History:
    return History(contract).start("w1").start("w2", W2_PID).enqueue("a")


# -- a claim sent before a SIGSTOP, committed after the SIGCONT ------------------------------------------


def stopped_with_claim_in_flight(*, sent_after_heal: bool = False) -> History:
    """w1 claims a and sends its claim probe; SIGSTOP lands before the sink commits it. w2 reclaims after
    the lease; the probe is committed after the SIGCONT; w1 learns it lost the job and gives it up."""
    h = two_workers()
    sent = h.t + 0.005
    h.stop("w1").claim("a", "w2", "t2", dt=1.2, pid=W2_PID).heal("w1", dt=0.1)
    if sent_after_heal:
        sent = h.t + 0.005
    h.claim("a", "w1", "t1", pid=PID, sent=sent)
    h.probe("heartbeat", "a", "w1", "t1", ok=False, pid=PID).abandon("a", "w1", "t1", reason="lost")
    return h.effect("a", "w2", "t2").ack("a", "w2", "t2")


def test_a_claim_sent_before_a_stop_is_judged_when_it_was_sent() -> None:
    verdict = judge(stopped_with_claim_in_flight().snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]
    assert verdict.counts["completed"] == 1
    assert list(verdict.recovery["jobs"]) == ["a"], "w2's claim recovered the job the stop took from w1"


def test_a_claim_sent_after_the_stop_still_takes_the_job_from_its_healthy_owner() -> None:
    # near miss: sent after SIGCONT, the claim took a job w2 held: premature, and w2's ack then stale
    verdict = judge(stopped_with_claim_in_flight(sent_after_heal=True).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert "premature_reclaim" in kinds(verdict)


def test_a_send_time_before_the_workers_previous_probe_is_not_believed() -> None:
    """w1's stamp says before the stop, but w1 reported another probe after the stop was healed: the stamp
    cannot be older than that, so the claim did not cross the stop."""
    h = two_workers().enqueue("b")
    sent = h.t + 0.005
    h.stop("w1").claim("a", "w2", "t2", dt=1.2, pid=W2_PID).heal("w1", dt=0.1)
    h.claim("b", "w1", "tb", pid=PID).effect("b", "w1", "tb").ack("b", "w1", "tb")
    h.claim("a", "w1", "t1", pid=PID, sent=sent).effect("a", "w2", "t2").ack("a", "w2", "t2")
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert "premature_reclaim" in kinds(verdict)


def test_without_a_fault_between_sending_and_arrival_claims_count_in_arrival_order() -> None:
    """w2 takes a job w1 holds, alive and unfaulted; its stamp claims to predate w1's claim: no fault
    froze w2 meanwhile, so the stamp cannot reorder anything."""
    h = two_workers()
    sent = h.t + 0.001
    h.claim("a", "w1", "t1", pid=PID).claim("a", "w2", "t2", pid=W2_PID, sent=sent)
    verdict = judge(h.effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done").events)
    assert "premature_reclaim" in kinds(verdict)


# -- a claim committed after its worker was SIGKILLed and reaped -----------------------------------------


def killed_with_claim_in_flight(*, stamped: bool = True) -> History:
    h = two_workers()
    sent = h.t + 0.005
    h.kill("w1")
    h.claim("a", "w1", "t1", pid=PID, **({"sent": sent} if stamped else {}))
    h.claim("a", "w2", "t2", dt=1.2, pid=W2_PID)
    return h.effect("a", "w2", "t2").ack("a", "w2", "t2")


def test_a_claim_committed_after_its_worker_was_reaped_is_no_live_owner() -> None:
    verdict = judge(killed_with_claim_in_flight().snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]
    assert verdict.recovery["jobs"]["a"][0] > 1.0, "recovered by w2 after the kill took w1"


def test_a_reaped_workers_claim_without_a_send_time_is_still_no_live_owner() -> None:
    verdict = judge(killed_with_claim_in_flight(stamped=False).snapshot(a="done").events)
    assert not any("process alive" in v.message for v in verdict.violations), verdict.violations
    assert "premature_reclaim" not in kinds(verdict)


def test_a_reclaim_from_a_live_owner_before_its_kill_is_still_premature() -> None:
    # near miss: w1's claim arrived while it lived; w2 took the job at once; only then was w1 killed
    h = two_workers().claim("a", "w1", "t1", pid=PID).claim("a", "w2", "t2", pid=W2_PID).kill("w1")
    verdict = judge(h.effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done").events)
    assert "premature_reclaim" in kinds(verdict)
    assert any("process alive" in v.message for v in verdict.violations)


def test_a_reaped_workers_late_claim_still_counts_against_the_lease() -> None:
    # near miss: the lease outlives its killed owner; w2 claims 0.3s after w1's claim was sent: early
    h = two_workers()
    sent = h.t + 0.005
    h.kill("w1").claim("a", "w1", "t1", pid=PID, sent=sent).claim("a", "w2", "t2", dt=0.3, pid=W2_PID)
    verdict = judge(h.effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done").events)
    assert "early_reclaim" in kinds(verdict)


# -- the heartbeat gap rule ------------------------------------------------------------------------------


def beats(contract: Contract, gaps: list[float]) -> History:
    h = History(contract).start("w1").enqueue("a").claim("a", "w1", "t1", pid=PID)
    for gap in gaps:
        h.heartbeat("a", "w1", "t1", dt=gap)
    return h.effect("a", "w1", "t1").ack("a", "w1", "t1")


def test_extensions_further_apart_than_the_lease_are_a_heartbeat_gap() -> None:
    verdict = judge(beats(LEASE, [0.25, 0.25, 1.4, 0.25]).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    (violation,) = verdict.violations
    assert violation.kind == "heartbeat_gap" and violation.detail["gap_s"] == 1.4
    assert "past lease_s = 1.0s" in violation.message


def test_a_gap_just_under_the_lease_passes() -> None:
    verdict = judge(beats(LEASE, [0.25, 0.99, 0.99, 0.25]).snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]


def test_a_reservation_bounds_the_gap_where_there_is_no_lease() -> None:
    ttr = replace(LOCK, reservation_s=2.0)  # beanstalkd: touching every 4s on a 2s TTR
    assert kinds(judge(beats(ttr, [4.0, 4.0]).snapshot(a="done").events)) == {"heartbeat_gap"}
    assert judge(beats(ttr, [0.4, 1.9, 0.4]).snapshot(a="done").events).verdict == "pass"
    assert judge(beats(LOCK, [4.0, 4.0]).snapshot(a="done").events).verdict == "pass", "no lease, no bound"


def test_a_fault_on_the_owner_explains_a_gap() -> None:
    h = History(LEASE).start("w1").enqueue("a").claim("a", "w1", "t1", pid=PID).heartbeat("a", "w1", "t1")
    h.stop("w1").heal("w1", dt=1.5).heartbeat("a", "w1", "t1").heartbeat("a", "w1", "t1", dt=0.25)
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert "heartbeat_gap" not in kinds(verdict)


def test_a_backend_restart_under_way_explains_a_gap_its_workers_end_before_it_returns() -> None:
    """The owner extends just after the restart is journaled (the crash has not landed yet), then reaches the
    restarted server before the restart returns: the gap spans the restart, which explains it."""
    h = History(LEASE).start("w1").enqueue("a").claim("a", "w1", "t1", pid=PID).heartbeat("a", "w1", "t1")
    h.journal("backend_restart", events.BACKEND, "f1", mode="immediate").heartbeat("a", "w1", "t1")
    h.heartbeat("a", "w1", "t1", dt=1.4).record(events.backend_restart("immediate", 100, 200, 1.4))
    h.applied(events.BACKEND, "f1", mode="immediate", down_s=1.4).heartbeat("a", "w1", "t1", dt=0.25)
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert "heartbeat_gap" not in kinds(verdict)


def test_a_gap_after_a_backend_restart_returned_is_still_a_gap() -> None:
    h = History(LEASE).start("w1").enqueue("a").claim("a", "w1", "t1", pid=PID).heartbeat("a", "w1", "t1")
    h.backend_restart().heartbeat("a", "w1", "t1").heartbeat("a", "w1", "t1", dt=1.5)
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert "heartbeat_gap" in kinds(verdict)


def test_a_fault_on_another_worker_does_not_explain_a_gap() -> None:
    h = History(LEASE).start("w1").start("w2", W2_PID).enqueue("a").claim("a", "w1", "t1", pid=PID)
    h.heartbeat("a", "w1", "t1").stop("w2").heal("w2", dt=1.5).heartbeat("a", "w1", "t1")
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert "heartbeat_gap" in kinds(verdict)


def test_a_clock_faulted_workers_send_time_is_not_used() -> None:
    """Under a clock fault the worker's clocks are the fault's business: its stamp reorders nothing (and a
    reclaim from a skewed owner is excused by the fault itself, not by the stamp)."""
    h = History(LEASE).clock("w1", 30.0).start("w2", W2_PID).enqueue("a")
    sent = h.t + 0.005
    h.stop("w1", fid="f2").claim("a", "w2", "t2", dt=1.2, pid=W2_PID).heal("w1", fid="f2", dt=0.1)
    h.claim("a", "w1", "t1", pid=PID, sent=sent)
    run_claims = [e for e in h.events if e.kind == "probe.claim"]
    history = scan(h.events).jobs["a"]
    assert [e.worker for e in history.executions] == ["w2", "w1"], "arrival order: the stamp was not used"
    assert history.executions[1].at == run_claims[1].mono


def test_a_claim_in_flight_across_a_stop_that_nobody_reclaimed_keeps_its_job() -> None:
    """w1's claim report crosses a stop; nobody took the job meanwhile; w1 resumes, extends and completes it."""
    h = two_workers()
    sent = h.t + 0.005
    h.stop("w1").heal("w1", dt=0.5).claim("a", "w1", "t1", pid=PID, sent=sent)
    h.heartbeat("a", "w1", "t1", dt=0.25).effect("a", "w1", "t1").ack("a", "w1", "t1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]
    assert not verdict.recovery["jobs"], "the owner survived its stop and acked: nothing to recover"
