"""The lease rules the ledger proves (issue 10): a stale extension accepted, work after a known loss, a
reclaim sooner than the lease allows, and a claim in flight across a SIGSTOP. Each rule has a trigger
and a near miss that must stay silent."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from chaos.runtime import probe_schema
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE, LOCK


def kinds(verdict: Verdict) -> list[str]:
    return [v.kind for v in verdict.violations]


def stopped_owner(*, extensions_after_resume: list[bool]) -> History:
    """w1 claims a and is stopped past its lease; w2 reclaims; w1 resumes and reports its extensions."""
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.2)
    h.heal("w1", dt=0.1)
    for ok in extensions_after_resume:
        h.heartbeat("a", "w1", "t1", ok=ok, dt=0.25)
    h.abandon("a", "w1", "t1", reason="lost")
    return h.effect("a", "w2", "t2").ack("a", "w2", "t2")


# -- rule 1: a stale extension accepted -----------------------------------------------------------------


def test_a_second_successful_extension_after_the_job_was_reclaimed_is_a_stale_extension() -> None:
    verdict = judge(stopped_owner(extensions_after_resume=[True, True, True]).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert kinds(verdict) == ["stale_extension_accepted"]  # reported once per execution
    (violation,) = verdict.violations
    assert "w1#1 extended its lease successfully" in violation.message
    assert "w2#1 had claimed the job" in violation.message
    assert violation.detail["claimer"] == "w2" and violation.detail["exposure_s"] == pytest.approx(0.6, abs=0.02)


def test_one_late_successful_extension_may_have_committed_before_the_reclaim() -> None:
    # its report was in flight when w1 was stopped: it proves nothing
    verdict = judge(stopped_owner(extensions_after_resume=[True, False]).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_a_stale_extension_is_an_anomaly_when_the_contract_accepts_stale_acks() -> None:
    h = stopped_owner(extensions_after_resume=[False, True])
    h.events[0].data["contract"] = replace(LEASE, stale_ack="accepted").to_dict()
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert [a["kind"] for a in verdict.anomalies] == ["stale_extension_accepted"]


# -- rule 2: work after a known loss ---------------------------------------------------------------


def lost_then_effect(*, recovered: bool, contract: Contract = LEASE) -> Verdict:
    h = History(contract).enqueue("a").claim("a", "w1")
    h.heartbeat("a", "w1", ok=True, dt=0.25).heartbeat("a", "w1", ok=False, dt=0.25)
    if recovered:
        h.heartbeat("a", "w1", ok=True, dt=0.25)
    h.effect("a", "w1", dt=0.3).ack("a", "w1")
    return judge(h.snapshot(a="done").events)


def test_an_effect_after_a_failed_extension_is_an_anomaly_with_its_exposure_without_a_watchdog() -> None:
    verdict = lost_then_effect(recovered=False)
    assert verdict.verdict == "pass", verdict.violations
    (anomaly,) = verdict.anomalies
    assert anomaly["kind"] == "work_after_known_loss" and anomaly["exposure_s"] == pytest.approx(0.3, abs=0.02)
    assert "watchdog = false" in anomaly["message"]


def test_an_effect_after_a_failed_extension_is_a_violation_when_the_contract_promises_a_watchdog() -> None:
    verdict = lost_then_effect(recovered=False, contract=replace(LEASE, watchdog=True))
    assert kinds(verdict) == ["work_after_known_loss"]
    assert "watchdog = true" in verdict.violations[0].message


def test_an_effect_after_a_later_extension_succeeded_is_not_work_after_a_loss() -> None:
    verdict = lost_then_effect(recovered=True, contract=replace(LEASE, watchdog=True))
    assert verdict.verdict == "pass" and verdict.anomalies == [], verdict


# -- rule 3: a reclaim sooner than the lease allows -------------------------------------------------------


def killed_owner_reclaimed(after_extension_s: float, contract: Contract = LEASE) -> Verdict:
    """w1 claims, extends at +0.5s, is killed; w2 claims `after_extension_s` after that extension."""
    h = History(contract).enqueue("a").claim("a", "w1").heartbeat("a", "w1", dt=0.5)
    h.kill("w1")  # three events, 0.01s apart
    h.execute("a", "w2", dt=after_extension_s - 0.03)
    return judge(h.snapshot(a="done").events)


def test_a_reclaim_before_the_killed_owners_lease_expired_is_an_early_reclaim() -> None:
    verdict = killed_owner_reclaimed(0.4)
    assert kinds(verdict) == ["early_reclaim"]
    (violation,) = verdict.violations
    assert violation.detail["early_s"] == pytest.approx(0.6, abs=0.01)
    assert "does not enforce its lease" in violation.message and "w1#1" in violation.message


def test_a_reclaim_within_the_tolerance_of_the_lease_end_is_a_recovery() -> None:
    verdict = killed_owner_reclaimed(0.95)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery["max_s"] == pytest.approx(0.93, abs=0.005)  # from the kill's applied record


def test_the_tolerance_is_a_contract_key() -> None:
    verdict = killed_owner_reclaimed(0.95, replace(LEASE, lease_tolerance_s=0.01))
    assert kinds(verdict) == ["early_reclaim"]


def test_without_a_lease_a_reclaim_at_once_is_a_recovery() -> None:
    verdict = killed_owner_reclaimed(0.05, LOCK)
    assert verdict.verdict == "pass", verdict.violations


def test_a_job_its_owner_gave_back_may_be_claimed_at_once() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").abandon("a", "w1", reason="handler failed")
    verdict = judge(h.execute("a", "w2").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


# -- rule 5: a claim in flight when its worker was stopped ---------------------------------------------


def claim_around_a_stop(*, claim_while_stopped: bool) -> Verdict:
    """w1's claim of a is reported while w1 is stopped (it was in flight), or after it resumed."""
    h = History(LEASE).enqueue("a").stop("w1")
    if claim_while_stopped:
        h.claim("a", "w1", "t1").claim("a", "w2", "t2", dt=1.2).heal("w1")
    else:
        h.heal("w1").claim("a", "w1", "t1").claim("a", "w2", "t2", dt=1.2)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2").abandon("a", "w1", "t1", reason="lost")
    return judge(h.snapshot(a="done").events)


def test_a_claim_reported_while_its_worker_is_stopped_is_covered_by_the_stop() -> None:
    verdict = claim_around_a_stop(claim_while_stopped=True)
    assert verdict.verdict == "pass", verdict.violations


def test_a_claim_made_after_the_stop_healed_is_not_covered() -> None:
    verdict = claim_around_a_stop(claim_while_stopped=False)
    assert kinds(verdict) == ["premature_reclaim"]


# -- an ack whose outcome the worker could not learn ---------------------------------------------------


def test_an_ack_with_an_unknown_outcome_is_neither_a_stale_ack_nor_a_release() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").partition("w1", cut=1)
    h.claim("a", "w2", "t2", dt=1.2).heal("w1").ack("a", "w1", "t1", ok=None)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "redelivered"}


def test_a_heartbeat_must_say_whether_the_extension_succeeded() -> None:
    assert probe_schema.parse("ack", b'{"job": "a", "ok": null}')["ok"] is None
    with pytest.raises(probe_schema.BadProbe, match="heartbeat probe must be true or false"):
        probe_schema.parse("heartbeat", b'{"job": "a", "ok": null}')
