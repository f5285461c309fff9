"""The real cause named (issue 34, item 4): where the queue's own record, or the owner's refused extension,
shows the job left its owner before a fault took that owner, the late recovery is counted, and its witness
starts, from that event, and the fault is not named as its cause. So for every message that would blame the
fault: a job still waiting (unsettled, or stuck once the bound passed since that event), a job gone (lost, not
dropped), an unknown job's note, and the owner-loss rules (no owner died holding the job)."""

from __future__ import annotations

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Violation
from chaos.contract import Contract
from tests.history import AT_LEAST_ONCE, History
from tests.unit.test_checker_anomalies import LEASE
from tests.unit.test_checker_owner_loss import DROP, FAIL

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
    assert "its owner w1#1 reported its lease extension refused" in violation.message
    assert "fault f1 (stop w1) came after that and is not the cause" in violation.message
    assert violation.detail["cause"] == events.PROBE_HEARTBEAT
    assert violation.witness[0]["kind"] == events.PROBE_HEARTBEAT and violation.witness[0]["data"]["ok"] is False


def test_an_extension_refused_then_accepted_again_before_the_fault_leaves_the_fault_the_cause() -> None:
    violation = late(refused_then_stopped(renewed=True))
    assert "after fault f1 (stop w1) took its owner w1" in violation.message
    assert violation.detail["fault"] == "f1"


# -- the same rule for every message that names a fault as a cause ----------------------------------


def released_then_killed(contract: Contract, *, release_before_fault: bool, fail: bool = False) -> History:
    """The queue's record releases (or fails) w1's job `a`, stamped before a kill of w1 or after it."""
    kind = events.QUEUE_FAIL if fail else events.QUEUE_RELEASE
    h = History(contract).enqueue("a", fail=False).queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1")
    if release_before_fault:
        h.queue(kind, "a", "w1", 2, dt=0.2)
    h.kill("w1")
    return h if release_before_fault else h.queue(kind, "a", "w1", 2, dt=0.2)


@pytest.mark.parametrize("before", [True, False], ids=["released-first", "fault-first"])
def test_an_unsettled_job_waits_from_the_release_that_came_before_the_fault(before: bool) -> None:
    h = released_then_killed(AT_LEAST_ONCE, release_before_fault=before)
    verdict = judge(h.snapshot_with(dt=0.3, a={"state": "pending"}).events)
    assert verdict.jobs == {"a": "unsettled"} and verdict.verdict == "inconclusive", verdict.violations
    (note,) = [n for n in verdict.notes if n.startswith("a was still pending")]
    if before:
        assert "after the queue's own record took it from its owner w1 (queue.release" in note
        assert "fault f1 (kill w1) came after that and is not the cause" in note
        assert "after fault f1" not in note
    else:
        assert "after fault f1 took its owner w1" in note and "not the cause" not in note


@pytest.mark.parametrize("before", [True, False], ids=["refused-first", "fault-first"])
def test_a_job_left_before_the_fault_is_stuck_once_the_bound_passed_since_it_left(before: bool) -> None:
    """Refused 1.5 s before the stop (or not refused), snapshot 1 s after it, w2 idle throughout: 2.5 s since
    the job left w1, past the bound of 2 s, but 1 s since the fault."""
    h = History(LEASE).start("w1").start("w2").enqueue("a").claim("a", "w1", "t1")
    h.heartbeat("a", "w1", "t1", ok=not before, dt=0.25)
    h.stop("w1", dt=1.5)
    verdict = judge(h.snapshot_with(dt=1.0, a={"state": "pending"}).events)
    if before:
        (violation,) = verdict.violations
        assert violation.kind == "stuck" and verdict.jobs == {"a": "stuck"}
        assert "waited since its owner w1#1 reported its lease extension refused" in violation.message
        assert "fault f1 (stop w1) came after that and is not the cause" in violation.message
        assert violation.witness[0]["kind"] == events.PROBE_HEARTBEAT
    else:
        assert verdict.jobs == {"a": "unsettled"} and not verdict.violations
        assert any("after fault f1 took its owner w1" in n for n in verdict.notes)


def test_under_drop_a_job_the_queue_released_before_its_owner_died_is_lost_not_dropped() -> None:
    verdict = judge(released_then_killed(DROP, release_before_fault=True).snapshot(a="absent").events)
    assert verdict.jobs == {"a": "lost"}
    (violation,) = verdict.violations
    assert "reports it absent: the queue's own record took it from its owner w1 (queue.release" in violation.message
    assert "on_owner_loss = drop (for a job whose owner dies holding it) does not apply" in violation.message
    assert violation.witness[0]["kind"] == events.QUEUE_RELEASE
    assert "fault f1 (kill w1) came after that and is not the cause" in violation.message


def test_under_drop_a_release_after_the_owner_died_leaves_the_job_dropped() -> None:
    verdict = judge(released_then_killed(DROP, release_before_fault=False).snapshot(a="absent").events)
    assert verdict.jobs == {"a": "dropped"} and not verdict.violations


def test_under_fail_a_job_the_queue_failed_before_its_owner_died_is_a_dead_letter_judged_on_its_own() -> None:
    h = released_then_killed(FAIL, release_before_fault=True, fail=True)
    verdict = judge(h.snapshot_with(a={"state": "dead", "attempts": 1}).events)
    (violation,) = verdict.violations
    assert violation.kind == "dead_lettered" and "not a poison job" in violation.message


def test_under_fail_a_job_failed_after_its_owner_died_is_the_promise_kept() -> None:
    h = released_then_killed(FAIL, release_before_fault=False, fail=True)
    verdict = judge(h.snapshot_with(a={"state": "dead", "attempts": 1}).events)
    assert verdict.jobs == {"a": "dead_lettered"} and not verdict.violations


@pytest.mark.parametrize("before", [True, False], ids=["released-first", "fault-first"])
def test_a_claim_after_a_release_that_came_before_the_owner_died_is_no_redelivery_after_owner_loss(
        before: bool) -> None:
    h = released_then_killed(FAIL, release_before_fault=before)
    verdict = judge(h.execute("a", "w2", dt=0.3).snapshot(a="done").events)
    found = [v for v in verdict.violations if v.kind == "redelivered_after_owner_loss"]
    if before:
        assert not found and verdict.verdict == "pass", verdict.violations
    else:
        (violation,) = found
        assert "after fault f1 (kill w1) ended the execution of its owner w1" in violation.message


@pytest.mark.parametrize("before", [True, False], ids=["released-first", "fault-first"])
def test_an_unknown_jobs_note_names_the_release_not_the_fault_that_came_after(before: bool) -> None:
    h = History(AT_LEAST_ONCE).enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1")
    h.effect("a", "w1", "t1")
    if before:
        h.queue(events.QUEUE_RELEASE, "a", "w1", 2, dt=0.2)
    h.kill("w1")
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"}
    (note,) = [n for n in verdict.notes if n.startswith("a made its effect")]
    if before:
        assert "; the queue's own record took it from its owner w1 (queue.release" in note
        assert "fault f1 (kill w1) came after that and is not the cause" in note
        assert "died holding it" not in note
    else:
        assert "its owner w1#1 died holding it (fault f1, kill w1)" in note
