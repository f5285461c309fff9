"""The checker's anomalies on hand-written ledgers: for each, one ledger that triggers it and a near miss
that must not (overlap, stale ack, premature reclaim, effect after lease loss, recovery bound, dead
letters), and the `exercised` rule of every fault kind."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import FaultReport, Verdict, Violation
from chaos.contract import Contract
from tests.history import AT_LEAST_ONCE, History

# pg_lease's contract: overlap and a late effect are allowed once the owner lost its lease
LEASE = Contract(recovery_bound_s=2.0, delivery="at-least-once", lease_s=1.0, heartbeat_s=0.25,
                 stale_ack="rejected", overlap="after-lease-loss", max_attempts=3)
# the same promises on a lock that ends with its owner's session (pg_txlock): a reclaim may follow at once
LOCK = replace(LEASE, lease_s=None, heartbeat_s=None)


def kinds(verdict: Verdict) -> list[tuple[str, str | None]]:
    return [(v.kind, v.job) for v in verdict.violations]


def only(verdict: Verdict, kind: str) -> Violation:
    (violation,) = [v for v in verdict.violations if v.kind == kind]
    return violation


def has_fault(violation: Violation, fault_kind: str) -> bool:
    return any(e["kind"] == "fault" and e["data"].get("kind") == fault_kind for e in violation.witness)


def fault(verdict: Verdict, fid: str = "f1") -> FaultReport:
    return next(f for f in verdict.faults if f.id == fid)


def stale_owner(contract: Contract = AT_LEAST_ONCE, *, late_effect: bool = False, ack_ok: bool = False) -> History:
    """w1 claims a, is stopped past its lease; w2 reclaims, effects and acks; w1 resumes, (maybe) effects,
    then acks (rejected unless `ack_ok`)."""
    h = History(contract).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2")
    h.heal("w1", dt=0.2)
    if late_effect:
        h.effect("a", "w1", "t1", dt=0.1)
    return h.ack("a", "w1", "t1", ok=ack_ok)


# -- overlapped ----------------------------------------------------------------------------------


def test_an_effect_made_before_the_owner_lost_the_job_is_a_redelivery_not_an_overlap() -> None:
    # w1's work ended with its effect; what it did after (its rejected ack) is not work on the job
    verdict = judge(stale_owner().snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "redelivered"}


def test_overlap_is_a_violation_under_overlap_never_with_the_fault_in_the_witness() -> None:
    verdict = judge(stale_owner(late_effect=True).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert verdict.jobs == {"a": "overlapped"} and verdict.counts["overlapped"] == 1
    assert kinds(verdict) == [("overlapped", "a"), ("effect_after_lease_loss", "a")]
    violation = only(verdict, "overlapped")
    assert "w2#1 claimed it" in violation.message and "w1#1" in violation.message
    assert "overlap = never" in violation.message
    assert has_fault(violation, "stop")


def test_overlap_after_a_stop_is_allowed_under_after_lease_loss() -> None:
    verdict = judge(stale_owner(LEASE, late_effect=True).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "overlapped"}
    assert [a["kind"] for a in verdict.anomalies] == ["effect_after_lease_loss"]


def test_overlap_is_a_violation_under_exactly_once_effect_even_after_lease_loss() -> None:
    verdict = judge(stale_owner(replace(LEASE, delivery="exactly-once-effect"), late_effect=True)
                    .snapshot(a="done").events)
    violation = only(verdict, "overlapped")
    assert "exactly-once-effect" in violation.message


def test_overlap_counts_when_the_later_claim_effects_first() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.2)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=False)
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.jobs == {"a": "overlapped"}


def test_effects_one_after_another_are_redelivered_not_overlapped() -> None:
    h = History().enqueue("a", "b").claim("a", "w1").effect("a", "w1").abandon("a", "w1").execute("a", "w2")
    h.execute("b", "w1", ack=False).kill("w1").execute("b", "w2")
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "redelivered", "b": "redelivered"}


def test_two_effects_of_one_execution_are_not_an_overlap() -> None:
    h = History().enqueue("a").claim("a", "w1").effect("a", "w1").effect("a", "w1").ack("a", "w1")
    assert judge(h.snapshot(a="done").events).jobs == {"a": "redelivered"}


# -- stale_ack_accepted --------------------------------------------------------------------------


def test_stale_ack_accepted_is_a_violation_naming_both_claims() -> None:
    verdict = judge(stale_owner(LEASE, ack_ok=True).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert kinds(verdict) == [("stale_ack_accepted", "a")]
    violation = only(verdict, "stale_ack_accepted")
    assert "w1#1 acknowledged it successfully" in violation.message
    assert "w2#1 had claimed it since" in violation.message
    assert violation.detail["owner"] == "w2" and violation.detail["token"] == "t1"
    assert has_fault(violation, "stop")


def test_stale_ack_that_the_queue_rejected_is_fine() -> None:
    verdict = judge(stale_owner(LEASE, ack_ok=False).snapshot(a="done").events)
    assert verdict.verdict == "pass" and verdict.violations == []


def test_ack_of_the_latest_claim_by_the_same_worker_with_a_new_token_is_fine() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").abandon("a", "w1", "t1").claim("a", "w1", "t2")
    h.effect("a", "w1", "t2").ack("a", "w1", "t2")
    assert judge(h.snapshot(a="done").events).verdict == "pass"


def test_stale_ack_of_an_older_token_of_the_same_worker_is_stale() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w1", "t2", dt=1.2)
    h.effect("a", "w1", "t2").ack("a", "w1", "t1")
    assert kinds(judge(h.snapshot(a="done").events)) == [("stale_ack_accepted", "a")]


def test_stale_ack_is_only_listed_when_the_contract_accepts_stale_acks() -> None:
    verdict = judge(stale_owner(replace(LEASE, stale_ack="accepted"), ack_ok=True).snapshot(a="done").events)
    assert verdict.verdict == "pass"
    (anomaly,) = verdict.anomalies
    assert anomaly["kind"] == "stale_ack_accepted" and anomaly["job"] == "a"
    assert "stale_ack = accepted" in anomaly["message"]


# -- premature_reclaim ---------------------------------------------------------------------------


def test_reclaim_from_a_live_unfaulted_owner_is_premature_even_when_overlap_is_allowed() -> None:
    h = History(LEASE).enqueue("a").start("w1", 11).start("w2", 12).claim("a", "w1", "t1", pid=11)
    h.heartbeat("a", "w1", "t1").claim("a", "w2", "t2", pid=12, dt=1.5)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2").abandon("a", "w1", "t1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert kinds(verdict) == [("premature_reclaim", "a")]
    violation = only(verdict, "premature_reclaim")
    assert "w2#1 claimed it" in violation.message
    assert "w1#1 still owned it" in violation.message
    assert "held it for 1.510s" in violation.message
    assert violation.detail["held_s"] == pytest.approx(1.51)
    claims = [e["worker"] for e in violation.witness if e["kind"] == "probe.claim"]
    assert claims == ["w1", "w2"]
    assert any(e["kind"] == "process.start" for e in violation.witness)


def test_reclaim_after_the_owner_was_stopped_is_not_premature() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").stop("w1").execute("a", "w2", dt=1.2)
    verdict = judge(h.heal("w1").abandon("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_reclaim_after_the_owner_process_exited_is_not_premature() -> None:
    h = History(LEASE).enqueue("a").start("w1", 11).claim("a", "w1", pid=11).exit("w1", 11, signal=None)
    verdict = judge(h.execute("a", "w2", dt=1.2).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_reclaim_from_an_owner_with_a_shifted_clock_is_not_premature() -> None:
    h = History(LEASE).enqueue("a").clock("w1", -30.0).claim("a", "w1").execute("a", "w2", dt=1.2)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_reclaim_after_a_backend_restart_during_the_execution_is_not_premature() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").backend_restart().execute("a", "w2", dt=1.2)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_reclaim_while_a_backend_restart_is_under_way_is_not_premature() -> None:
    # The server ends the owner's session before restart() returns, so the reclaim lands between the
    # fault's journal entry and its application record (seen on pg_txlock).
    h = History(LOCK).enqueue("a").claim("a", "w1")
    h.add("fault", None, "backend", id="f1", kind="backend_restart", target="backend", gate=None, mode="immediate")
    h.execute("a", "w2").add("backend.restart", mode="immediate", old_pid=1, new_pid=2, down_s=0.2)
    h.add("fault.applied", None, "backend", id="f1", mode="immediate").abandon("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_theft_reported_after_the_healthy_owner_gave_the_job_up_is_premature() -> None:
    # A worker reports its claim after committing it, so the owner's failed heartbeat and its abandon
    # (reason "lost") can reach the ledger before the claim that caused them (seen with a skewed clock).
    h = History(LEASE).enqueue("a").claim("a", "w1").heartbeat("a", "w1", ok=False)
    h.add("probe.abandon", "a", "w1", token="w1-a", reason="lost").execute("a", "w2")
    verdict = judge(h.snapshot(a="done").events)
    assert kinds(verdict) == [("premature_reclaim", "a"), ("early_reclaim", "a")]
    assert "had lost it to this claim" in verdict.violations[0].message


def test_reclaim_after_a_handler_failure_released_the_job_is_not_premature() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1")
    h.add("probe.abandon", "a", "w1", token="w1-a", reason="handler failed").execute("a", "w2")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


def test_a_stop_healed_before_the_claim_does_not_excuse_a_reclaim() -> None:
    h = History(LEASE).enqueue("a").stop("w1").heal("w1").claim("a", "w1").execute("a", "w2", dt=1.2)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    assert kinds(verdict) == [("premature_reclaim", "a")]


def test_the_exit_of_an_older_incarnation_does_not_end_the_current_one() -> None:
    h = History(LEASE).enqueue("a").start("w1", 11).start("w1", 21).claim("a", "w1", pid=21)
    h.exit("w1", 11).execute("a", "w2", dt=1.2).abandon("a", "w1")
    assert kinds(judge(h.snapshot(a="done").events)) == [("premature_reclaim", "a")]


def test_a_restarted_worker_reclaiming_its_own_job_is_a_recovery_not_a_premature_reclaim() -> None:
    h = History(LEASE).enqueue("a").start("w1", 4242).claim("a", "w1", "t1", pid=4242).restart("w1")
    h.claim("a", "w1", "t2", pid=4343, dt=1.2).effect("a", "w1", "t2").ack("a", "w1", "t2")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery["jobs"] == {"a": [pytest.approx(1.2)]}


# -- effect_after_lease_loss ---------------------------------------------------------------------


def test_effect_after_lease_loss_is_a_violation_with_its_exposure() -> None:
    verdict = judge(stale_owner(late_effect=True).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert sorted(kinds(verdict)) == [("effect_after_lease_loss", "a"), ("overlapped", "a")]
    violation = only(verdict, "effect_after_lease_loss")
    assert violation.detail["exposure_s"] == pytest.approx(0.32)  # effect - w2's claim
    assert "w1#1 made an accepted effect 0.320s after w2#1 had claimed the job" in violation.message
    assert has_fault(violation, "stop")
    assert verdict.anomalies == []


def test_effect_after_lease_loss_is_listed_as_an_anomaly_when_the_contract_allows_it() -> None:
    verdict = judge(stale_owner(LEASE, late_effect=True).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "overlapped"}
    (anomaly,) = verdict.anomalies
    assert anomaly["kind"] == "effect_after_lease_loss" and anomaly["job"] == "a"
    assert anomaly["exposure_s"] == pytest.approx(0.32)
    assert set(anomaly) == {"kind", "job", "exposure_s", "message"}


def test_effect_after_lease_loss_is_a_violation_when_delivery_is_not_at_least_once() -> None:
    verdict = judge(stale_owner(replace(LEASE, delivery="at-most-once"), late_effect=True).snapshot(a="done").events)
    assert ("effect_after_lease_loss", "a") in kinds(verdict)


def test_effect_before_the_competing_claim_has_no_exposure() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").effect("a", "w1").kill("w1").execute("a", "w2", dt=1.2)
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass" and verdict.anomalies == []


def test_a_rejected_effect_after_lease_loss_is_not_an_exposure() -> None:
    h = History().enqueue("a").claim("a", "w1").stop("w1").execute("a", "w2", dt=1.2).heal("w1")
    h.effect("a", "w1", accepted=False).ack("a", "w1", ok=False)
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "completed"}


# -- recovery_bound_exceeded ---------------------------------------------------------------------


def test_recovery_past_the_bound_after_a_stop_is_a_violation() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").stop("w1").execute("a", "w2", dt=3.0)
    verdict = judge(h.heal("w1").abandon("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert kinds(verdict) == [("recovery_bound_exceeded", "a")]
    violation = only(verdict, "recovery_bound_exceeded")
    assert "3.000s after fault f1 (stop w1)" in violation.message
    assert "recovery bound of 2.0s" in violation.message
    assert violation.detail["recovery_s"] == pytest.approx(3.0) and violation.detail["bound_s"] == 2.0
    assert has_fault(violation, "stop")
    assert verdict.recovery == {"jobs": {"a": [pytest.approx(3.0)]}, "min_s": pytest.approx(3.0),
                                "median_s": pytest.approx(3.0), "max_s": pytest.approx(3.0)}


def test_recovery_within_the_bound_passes_and_is_measured() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").stop("w1").execute("a", "w2", dt=1.5)
    verdict = judge(h.heal("w1").abandon("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery["max_s"] == pytest.approx(1.5)


def test_recovery_past_the_bound_after_a_backend_restart_is_a_violation() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").backend_restart().execute("a", "w2", dt=2.5)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    violation = only(verdict, "recovery_bound_exceeded")
    assert "(backend_restart backend)" in violation.message and violation.detail["owner"] == "w1"
    assert has_fault(violation, "backend_restart")
    assert any(e["kind"] == "backend.restart" for e in violation.witness)


def disconnected(h: History, claim_dt: float, healed_first: bool) -> History:
    """The backend's container cut off its network for 2.5 s (past the 2 s bound) while w1 held the job; w2
    claims it once the link is back, its claim journaled before the heal's record or after it."""
    h.journal("disconnect", events.BACKEND, "f1").applied(events.BACKEND, "f1", networks=[])
    heal = events.fault_healed("f1", events.BACKEND, {"networks": ["net"], "condition_held": False})
    if healed_first:
        return h.record(heal, dt=2.5).execute("a", "w2", dt=claim_dt)
    return h.claim("a", "w2", dt=2.5 + claim_dt).record(heal).effect("a", "w2").ack("a", "w2")


@pytest.mark.parametrize("healed_first", [True, False])
def test_a_disconnects_recovery_starts_when_the_link_is_back(healed_first: bool) -> None:
    """Nobody can reclaim while the server is cut off: the bound counts from the heal, and a claim that
    beats the heal's record into the ledger was made after the link came back."""
    h = disconnected(History(LEASE).enqueue("a").claim("a", "w1"), 0.3, healed_first)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    assert "recovery_bound_exceeded" not in [kind for kind, _ in kinds(verdict)], verdict.violations
    assert verdict.recovery["max_s"] < 0.5


def test_a_slow_recovery_after_a_disconnect_is_still_a_violation() -> None:
    h = disconnected(History(LEASE).enqueue("a").claim("a", "w1"), 2.5, True)
    verdict = judge(h.abandon("a", "w1").snapshot(a="done").events)
    assert only(verdict, "recovery_bound_exceeded").detail["owner"] == "w1"


def test_owner_that_survives_a_backend_restart_and_acks_needs_no_recovery() -> None:
    h = History(LEASE).enqueue("a", "b").claim("a", "w1").backend_restart().effect("a", "w1").ack("a", "w1")
    h.execute("b", "w1", dt=3.0)  # b was not owned during the restart
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery == {"jobs": {}}


def test_a_fault_on_a_worker_that_did_not_own_the_job_starts_no_recovery() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").effect("a", "w1").ack("a", "w1").kill("w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass" and verdict.recovery == {"jobs": {}}


def test_a_job_never_recovered_is_stuck() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").restart("w1")
    verdict = judge(h.snapshot(a="claimed").events)
    assert kinds(verdict) == [("stuck", "a")]


# -- dead_lettered -------------------------------------------------------------------------------


def poison_attempts(claims: int, contract: Contract = LEASE, fail: bool = True) -> History:
    h = History(contract).enqueue("a", fail=fail)
    for attempt in range(1, claims + 1):
        h.claim("a", f"w{attempt}", attempt=attempt).ack("a", f"w{attempt}", ok=False)
    return h.snapshot_with(a={"state": "dead", "attempts": claims})


def test_poison_job_dead_lettered_after_max_attempts_passes() -> None:
    verdict = judge(poison_attempts(3).events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "dead_lettered"}


def test_dead_lettered_with_fewer_attempts_than_max_attempts_is_a_violation() -> None:
    verdict = judge(poison_attempts(2).events)
    assert verdict.jobs == {"a": "dead_lettered"}
    violation = only(verdict, "dead_lettered")
    assert "after 2 attempt(s)" in violation.message and "max_attempts = 3" in violation.message


def test_dead_lettered_with_more_attempts_than_max_attempts_is_a_violation() -> None:
    assert kinds(judge(poison_attempts(4).events)) == [("dead_lettered", "a")]


def test_a_healthy_job_dead_lettered_is_a_violation() -> None:
    verdict = judge(poison_attempts(3, fail=False).events)
    assert "not a poison job" in only(verdict, "dead_lettered").message


def test_a_poison_job_without_max_attempts_left_pending_is_stuck() -> None:
    h = History().enqueue("a", fail=True).claim("a", "w1").ack("a", "w1", ok=False)
    assert kinds(judge(h.snapshot(a="pending").events)) == [("stuck", "a")]


# -- exercised -----------------------------------------------------------------------------------


def gated(h: History) -> History:
    return h.add("gate.armed", "a", gate="g1", spec="after:claim").claim("a", "w1").add(
        "gate.matched", "a", "w1", gate="g1")


def test_stop_is_exercised_when_applied_with_pids_after_its_gate() -> None:
    h = gated(History(LEASE).enqueue("a")).stop("w1", gate="g1").heal("w1").effect("a", "w1").ack("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict
    assert fault(verdict).exercised and "SIGSTOP" in fault(verdict).why and "resumed" in fault(verdict).why


def test_stop_without_pids_is_not_exercised() -> None:
    h = History(LEASE).enqueue("a").stop("w1", pids=[]).execute("a", "w2").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "inconclusive" and not fault(verdict).exercised


def test_stop_before_its_gate_matched_is_not_exercised() -> None:
    h = History(LEASE).enqueue("a").add("gate.armed", "a", gate="g1", spec="after:claim").stop("w1", gate="g1")
    h.claim("a", "w1").add("gate.matched", "a", "w1", gate="g1").heal("w1").effect("a", "w1").ack("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "inconclusive" and "had not matched" in fault(verdict).why


@pytest.mark.parametrize(("exited", "started", "why"), [
    (True, True, "started again"),
    (False, True, "no SIGKILL exit"),
    (True, False, "never started again"),
])
def test_restart_is_exercised_only_with_a_sigkill_exit_then_a_new_start(exited: bool, started: bool,
                                                                         why: str) -> None:
    h = History(LEASE).enqueue("a").restart("w1", exited=exited, started=started).execute("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert fault(verdict).exercised == (exited and started)
    assert why in fault(verdict).why
    assert verdict.verdict == ("pass" if exited and started else "inconclusive")


def test_restart_of_a_reconciler_is_exercised() -> None:
    h = History(LEASE).enqueue("a").start("reconciler", 50, role="reconciler")
    h.restart("reconciler", old_pid=50, new_pid=51).execute("a", "w1")
    assert fault(judge(h.snapshot(a="done").events)).exercised


@pytest.mark.parametrize("happened", [True, False])
def test_backend_restart_is_exercised_only_when_the_backend_reported_its_restart(happened: bool) -> None:
    h = History(LEASE).enqueue("a").backend_restart(happened=happened).execute("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert fault(verdict).exercised == happened
    assert verdict.verdict == ("pass" if happened else "inconclusive")
    if not happened:
        assert "backend.restart" in fault(verdict).why


def test_clock_is_exercised_when_the_workers_probes_show_the_shift() -> None:
    h = History(LEASE).enqueue("a").clock("w1", 30.0).execute("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass" and fault(verdict).exercised
    assert "+30.0s" in fault(verdict).why


def test_clock_that_did_not_take_is_not_exercised() -> None:
    h = History(LEASE).enqueue("a").clock("w1", 30.0, took=False).execute("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "inconclusive" and not fault(verdict).exercised
    assert "skew of +0.000s" in fault(verdict).why


def test_clock_with_no_probe_from_the_worker_is_not_exercised() -> None:
    h = History(LEASE).enqueue("a").clock("w1", -30.0).execute("a", "w2")
    verdict = judge(h.snapshot(a="done").events)
    assert not fault(verdict).exercised and "no probe from w1" in fault(verdict).why


def test_a_violation_outranks_an_unexercised_fault() -> None:
    h = History(LEASE).enqueue("a", "b").backend_restart(happened=False).execute("a", "w1")
    verdict = judge(h.snapshot(a="done", b="done").events)
    assert verdict.verdict == "fail" and kinds(verdict) == [("lost", "b")]


# -- the verdict stays serialisable --------------------------------------------------------------


def test_verdict_with_anomalies_and_details_is_json_serialisable() -> None:
    verdict = judge(stale_owner(LEASE, late_effect=True, ack_ok=True).snapshot(a="done").events)
    data: dict[str, Any] = json.loads(json.dumps(verdict.to_dict()))
    assert data["anomalies"][0]["kind"] == "effect_after_lease_loss"
    assert data["violations"][0]["kind"] == "stale_ack_accepted"
    assert data["violations"][0]["detail"]["owner"] == "w2"


def test_missing_anomaly_data_never_crashes_into_a_pass() -> None:
    h = History().enqueue("a").add("fault", None, "w1", id="f1", target="w1")  # no kind: malformed
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "error" and verdict.error is not None


# -- the execution model against a brute-force reference -----------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=24), st.integers(0, 15))
def test_overlap_premature_and_exposure_match_a_pairwise_reference(schedule: list[int], open_mask: int) -> None:
    """Up to four executions of one job (w<i>, token t<i>), each claim -> effect -> abandon (unless its bit
    in `open_mask` leaves it open), interleaved by `schedule`; compared with an O(n^2) reference."""
    steps = {i: ["claim", "effect"] + ([] if open_mask >> i & 1 else ["abandon"]) for i in set(schedule)}
    h = History(LEASE).enqueue("a")
    at: dict[tuple[int, str], int] = {}
    for i in schedule:
        if steps[i]:
            step = steps[i].pop(0)
            getattr(h, step)("a", f"w{i}", f"t{i}")
            at[(i, step)] = len(h.events)
    verdict = judge(h.snapshot(a="done").events)

    claims = sorted((seq, i) for (i, step), seq in at.items() if step == "claim")
    end = {i: at.get((i, "abandon"), 10**9) for _, i in claims}
    effecting = [i for _, i in claims if (i, "effect") in at]
    # two executions worked at once: one claimed the job before the other's effect (its last work on it)
    overlapping = any(at[(a, "claim")] < at[(b, "claim")] < at[(a, "effect")]
                      or at[(b, "claim")] < at[(a, "claim")] < at[(b, "effect")]
                      for a in effecting for b in effecting if a < b)
    premature = sum(1 for (seq, _), (_, prev) in zip(claims[1:], claims, strict=False) if end[prev] > seq)
    exposed = sum(1 for i in effecting if any(at[(i, "claim")] < seq < at[(i, "effect")] for seq, _ in claims))

    expected = ("completed" if len(effecting) == 1 else "overlapped" if overlapping else
                "redelivered" if effecting else "lost")
    assert verdict.jobs == {"a": expected}
    assert sum(1 for v in verdict.violations if v.kind == "premature_reclaim") == premature
    assert len(verdict.anomalies) == exposed


def test_a_claim_between_a_restart_and_its_applied_record_is_an_immediate_recovery() -> None:
    h = History(LOCK).enqueue("a").start("w1", 4242).claim("a", "w1", pid=4242)
    h.add("fault", None, "w1", id="f1", kind="restart", target="w1", gate=None).exit("w1", 4242).start("w1", 4343)
    h.claim("a", "w2").add("fault.applied", None, "w1", id="f1", pids=[4242], new_pid=4343)
    verdict = judge(h.effect("a", "w2").ack("a", "w2").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery["jobs"] == {"a": [0.0]}


def test_event_proven_violations_fail_a_run_even_without_its_final_snapshot() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").claim("a", "w2", dt=1.5)
    verdict = judge(h.events)
    assert verdict.verdict == "fail" and verdict.jobs == {"a": "unknown"}
    assert kinds(verdict) == [("premature_reclaim", "a")]
