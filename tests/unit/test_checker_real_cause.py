"""The real cause named (issue 34, item 4): where the queue's own record, or the owner's refused extension,
shows the job left its owner before a fault took that owner, the late recovery is counted, and its witness
starts, from that event, and the fault is not named as its cause."""

from __future__ import annotations

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Violation
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE

LATE = "recovery_bound_exceeded"


def late(h: History) -> Violation:
    verdict = judge(h.snapshot(a="done").events)
    (violation,) = [v for v in verdict.violations if v.kind == LATE]
    return violation


def released_then_partitioned(*, release_before_fault: bool) -> History:
    """The queue's record releases w1's job `a` (its own sweep), a partition cuts w1 off, and w2 claims `a`
    3 s after the partition."""
    h = History(LEASE).enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1")
    if release_before_fault:
        h.queue(events.QUEUE_RELEASE, "a", "w1", 2, dt=0.2)
    h.partition("w1")
    if not release_before_fault:  # stamped by the queue after the fault (its failed extension came first)
        h.heartbeat("a", "w1", "t1", ok=False, dt=0.5).queue(events.QUEUE_RELEASE, "a", "w1", 2, dt=0.5)
    h.claim("a", "w2", "t2", dt=3.0).queue(events.QUEUE_CLAIM, "a", "w2", 3)
    return h.effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1")


def test_a_job_the_queue_released_before_the_fault_is_late_from_the_release_not_the_fault() -> None:
    violation = late(released_then_partitioned(release_before_fault=True))
    assert "after the queue's own record took it from its owner w1 (queue.release: released" in violation.message
    assert "fault f1 (partition w1) came after that and is not the cause" in violation.message
    assert "after fault f1" not in violation.message
    assert violation.detail["fault"] is None and violation.detail["after_fault"] == "f1"
    assert violation.detail["cause"] == events.QUEUE_RELEASE
    # from the release by its own timestamp (stamped 0.2 s before its journal entry), not from the fault
    assert violation.detail["recovery_s"] == pytest.approx(3.22, abs=0.02)
    assert violation.witness[0]["kind"] == events.QUEUE_RELEASE  # the witness starts there


def test_a_release_after_the_fault_leaves_the_fault_the_cause() -> None:
    violation = late(released_then_partitioned(release_before_fault=False))
    assert "after fault f1 (partition w1) took its owner w1" in violation.message
    assert violation.detail["fault"] == "f1" and "cause" not in violation.detail


def refused_then_stopped(*, renewed: bool) -> History:
    """w1's lease extension is refused (then, or not, accepted again) before a stop; w2 claims 3 s later."""
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").heartbeat("a", "w1", "t1", ok=False, dt=0.25)
    if renewed:
        h.heartbeat("a", "w1", "t1", ok=True, dt=0.25)
    h.stop("w1", dt=0.2).claim("a", "w2", "t2", dt=3.0).effect("a", "w2", "t2").ack("a", "w2", "t2")
    return h.heal("w1").abandon("a", "w1", "t1", reason="lost")


def test_an_extension_refused_before_the_fault_is_where_the_job_left_its_owner() -> None:
    violation = late(refused_then_stopped(renewed=False))
    assert "its owner w1 (token t1) reported its lease extension refused" in violation.message
    assert "fault f1 (stop w1) came after that and is not the cause" in violation.message
    assert violation.detail["cause"] == events.PROBE_HEARTBEAT
    assert violation.witness[0]["kind"] == events.PROBE_HEARTBEAT and violation.witness[0]["data"]["ok"] is False


def test_an_extension_refused_then_accepted_again_before_the_fault_leaves_the_fault_the_cause() -> None:
    violation = late(refused_then_stopped(renewed=True))
    assert "after fault f1 (stop w1) took its owner w1" in violation.message
    assert violation.detail["fault"] == "f1"
