"""A lease nobody honoured (issue 34, item 2): under a lease contract, an owner a fault kept from renewing
comes back to a job nobody reclaimed for longer than the recovery bound after the fault, while a worker was
free: `recovery_bound_exceeded`, although the owner finished the job. The wait counts from the fault, as a
reclaim's recovery does, so a queue that never reclaims is held to the same bound as one that reclaims late."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE, LOCK

LATE = "recovery_bound_exceeded"


def kinds(verdict: Verdict) -> list[str]:
    return [v.kind for v in verdict.violations]


def stopped_owner_returns(stopped_s: float, contract: Contract = LEASE, *, spare_busy: bool = False,
                          fault: str = "stop") -> History:
    """w1 claims `a` and is stopped (or cut off) for `stopped_s`; nobody claims `a`; w1 comes back, renews and
    completes it. w2 is idle throughout, or busy with `b` for as long (`spare_busy`)."""
    h = History(contract).enqueue("a", "b")
    if spare_busy:
        h.claim("b", "w2", "tb")
    h.claim("a", "w1", "t1").heartbeat("a", "w1", "t1", dt=0.25)
    if fault == "stop":
        h.stop("w1").heal("w1", dt=stopped_s)
    else:
        h.partition("w1").heal("w1", dt=stopped_s)
    h.heartbeat("a", "w1", "t1", dt=0.1).effect("a", "w1", "t1").ack("a", "w1", "t1")
    if spare_busy:
        h.effect("b", "w2", "tb").ack("b", "w2", "tb")
    else:
        h.execute("b", "w2")
    return h


@pytest.mark.parametrize("fault", ["stop", "partition"])
def test_an_owner_that_returns_to_a_job_nobody_reclaimed_past_the_bound_is_a_late_recovery(fault: str) -> None:
    verdict = judge(stopped_owner_returns(4.0, fault=fault).snapshot(a="done", b="done").events)
    assert verdict.verdict == "fail"
    assert kinds(verdict) == [LATE]
    (violation,) = verdict.violations
    assert f"fault f1 ({fault} w1) kept its owner w1#1 from renewing its lease" in violation.message
    assert "the lease ran out at +" in violation.message and "lease_s = 1.0s" in violation.message
    assert "whether or not the owner returns" in violation.message
    assert violation.detail["fault"] == "f1" and violation.detail["by"] is None
    assert violation.detail["recovery_s"] == pytest.approx(4.1, abs=0.05)  # from the fault, as a recovery is


def test_an_owner_back_within_the_bound_after_the_fault_is_no_violation() -> None:
    # its lease ran out at once (+1 s), but a reclaim at this time would have been within the bound too
    verdict = judge(stopped_owner_returns(1.7).snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]


@pytest.mark.parametrize("stopped_s", [2.2, 3.0])
def test_never_reclaiming_is_held_to_the_bound_a_late_reclaim_is(stopped_s: float) -> None:
    # the same stop, once with a reclaim `stopped_s` after it and once with none until the owner came back at
    # that time: a queue that never reclaimed must not pass where one that reclaimed late fails
    h = History(LEASE).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1", "t1")
    h.heartbeat("a", "w1", "t1", dt=0.25).stop("w1").claim("a", "w2", "t2", dt=stopped_s)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2")
    reclaimed = judge(h.heal("w1", dt=0.5).abandon("a", "w1", "t1", reason="lost").snapshot(a="done").events)
    h = History(LEASE).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1", "t1")
    h.heartbeat("a", "w1", "t1", dt=0.25).stop("w1").heal("w1", dt=stopped_s).heartbeat("a", "w1", "t1")
    returned = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert kinds(reclaimed) == kinds(returned) == [LATE], (reclaimed.violations, returned.violations)


def test_no_violation_when_no_worker_was_free_to_reclaim_it() -> None:
    verdict = judge(stopped_owner_returns(4.0, spare_busy=True).snapshot(a="done", b="done").events)
    assert LATE not in kinds(verdict), [v.message for v in verdict.violations]


def test_an_owner_scoped_contract_owes_no_reclaim_while_the_owner_lives() -> None:
    verdict = judge(stopped_owner_returns(4.0, LOCK).snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]


def test_a_reservation_is_a_lease_here() -> None:
    contract = replace(LOCK, reservation_s=1.0)
    verdict = judge(stopped_owner_returns(4.0, contract).snapshot(a="done", b="done").events)
    assert kinds(verdict) == [LATE]
    assert "reservation_s = 1.0s" in verdict.violations[0].message


def test_a_reclaim_within_the_bound_after_the_lease_is_no_violation() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.5)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1", dt=2.5).abandon("a", "w1", "t1", reason="lost")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]


def test_under_worker_leases_the_owner_is_back_at_its_workers_first_accepted_heartbeat() -> None:
    # near miss: w1 comes back within the bound and renews by its worker's heartbeat (naming another job),
    # then works on for long before its ack
    contract = replace(LEASE, lease_scope="worker")
    h = History(contract).enqueue("a", "b").claim("a", "w1", "t1").heartbeat("a", "w1", "t1", dt=0.25)
    h.stop("w1").heal("w1", dt=1.5).heartbeat("other", "w1", "tx", dt=0.1)
    h.heartbeat("other", "w1", "tx", dt=0.25).heartbeat("other", "w1", "tx", dt=0.25)
    h.effect("a", "w1", "t1", dt=3.0).ack("a", "w1", "t1").execute("b", "w2")  # w2 idle until then
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert LATE not in kinds(verdict), [v.message for v in verdict.violations]
