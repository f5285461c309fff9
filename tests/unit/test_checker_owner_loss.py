"""Contracts for what libraries promise (issue 18): what a queue does with a job whose owner died
(on_owner_loss = redeliver | fail | drop) and a lease per worker (lease_scope = worker). Each rule has
a ledger that triggers it and a near miss that must stay silent."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from chaos.errors import ConfigError
from chaos.target import load_target
from tests.history import AT_LEAST_ONCE, History
from tests.unit.test_checker_anomalies import LEASE

REPO = Path(__file__).resolve().parents[2]
REDELIVER = replace(AT_LEAST_ONCE, max_attempts=3)
FAIL = replace(REDELIVER, on_owner_loss="fail")
DROP = replace(REDELIVER, on_owner_loss="drop")
WORKER = replace(LEASE, lease_scope="worker")  # procrastinate's model: one heartbeat for all a worker holds


def kinds(verdict: Verdict) -> list[tuple[str, str | None]]:
    return [(v.kind, v.job) for v in verdict.violations]


def killed_after_claim(contract: Contract) -> History:
    """w1 claims a (a healthy job) and is SIGKILLed before its effect; nobody claims it again."""
    return History(contract).enqueue("a", fail=False).claim("a", "w1").kill("w1")


def killed_then_redelivered(contract: Contract) -> History:
    """w1 claims a and is killed; w2 claims it afterwards and completes it."""
    return killed_after_claim(contract).execute("a", "w2", dt=0.3).snapshot(a="done")


# -- the contract keys ---------------------------------------------------------------------------


def test_the_keys_default_to_todays_behaviour() -> None:
    contract = Contract.from_dict({"recovery_bound_s": 2.0}, "t")
    assert (contract.on_owner_loss, contract.lease_scope) == ("redeliver", "job")
    assert Contract.from_dict(DROP.to_dict(), "t") == DROP


@pytest.mark.parametrize("key, value, meaning", [
    ("on_owner_loss", "lose", "record it failed (dead)"),
    ("on_owner_loss", True, "whose owner died"),
    ("lease_scope", "process", "every job its worker holds"),
])
def test_a_bad_value_is_refused_in_one_paragraph_saying_what_the_key_decides(key: str, value: object,
                                                                             meaning: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Contract.from_dict({"recovery_bound_s": 2.0, key: value}, "target.toml")
    message = str(caught.value)
    assert "\n" not in message and f"contract {key} = {value!r}" in message and meaning in message
    assert "expected one of" in message


def test_a_c_override_sets_them_as_chaos_run_does() -> None:
    target = load_target(REPO / "targets" / "redis_basic")
    assert target.with_contract({"on_owner_loss": "drop", "lease_scope": "worker"}).contract == replace(
        target.contract, on_owner_loss="drop", lease_scope="worker")
    with pytest.raises(ConfigError, match="with -c overrides: contract on_owner_loss = 'gone'"):
        target.with_contract({"on_owner_loss": "gone"})


# -- on_owner_loss = drop: a dead owner's job gone is dropped ------------------------------------------


def test_under_drop_a_killed_owners_job_gone_from_the_queue_is_dropped() -> None:
    verdict = judge(killed_after_claim(DROP).snapshot(a="absent").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "dropped"}
    assert verdict.counts["dropped"] == 1 and verdict.counts["lost"] == 0


def test_under_redeliver_the_same_job_is_lost() -> None:
    verdict = judge(killed_after_claim(REDELIVER).snapshot(a="absent").events)
    assert kinds(verdict) == [("lost", "a")] and verdict.counts["dropped"] == 0


def test_under_drop_a_job_gone_without_its_owner_dying_is_lost() -> None:
    # the owner acked nothing and was never faulted: the queue lost it, whatever it promises for dead owners
    h = History(DROP).enqueue("a").claim("a", "w1").abandon("a", "w1", reason="handler failed")
    verdict = judge(h.snapshot(a="absent").events)
    assert kinds(verdict) == [("lost", "a")]


def test_under_drop_a_stopped_owner_did_not_die() -> None:
    h = History(DROP).enqueue("a").claim("a", "w1").stop("w1").heal("w1", dt=0.5)
    verdict = judge(h.abandon("a", "w1", reason="lost").snapshot(a="absent").events)
    assert kinds(verdict) == [("lost", "a")]


def test_under_drop_a_job_a_backend_restart_lost_is_lost() -> None:
    h = History(DROP).enqueue("a").claim("a", "w1").backend_restart().abandon("a", "w1", reason="lost")
    verdict = judge(h.snapshot(a="absent").events)
    assert kinds(verdict) == [("lost", "a")]


def test_under_drop_a_restarted_owners_job_gone_is_dropped() -> None:
    verdict = judge(History(DROP).enqueue("a").claim("a", "w1").restart("w1").snapshot(a="absent").events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "dropped"}, verdict.violations


def test_under_drop_a_dead_owners_job_still_held_past_the_bound_is_stuck() -> None:
    verdict = judge(killed_after_claim(DROP).snapshot(a="pending").events)
    assert kinds(verdict) == [("stuck", "a")]


def test_under_drop_a_job_that_made_its_effect_before_its_owner_died_is_dropped_not_completed() -> None:
    # the promise kept (its owner died and the queue forgot it), but nobody acked it: no completion is proven
    h = History(DROP).enqueue("a").claim("a", "w1").effect("a", "w1").kill("w1")
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "dropped"}, verdict.violations


def test_under_drop_a_dead_owners_job_recorded_dead_is_judged_as_any_dead_letter() -> None:
    # drop promises it gone; a queue that records it failed instead is held to max_attempts as without the key
    verdict = judge(killed_after_claim(DROP).snapshot(a="dead").events)
    assert kinds(verdict) == [("dead_lettered", "a")]


# -- on_owner_loss = fail: a dead owner's job ends dead ------------------------------------------------


def test_under_fail_a_killed_owners_job_ending_dead_is_the_promise_kept() -> None:
    # one attempt, not max_attempts = 3, and not a poison job: still no dead_lettered alarm
    verdict = judge(killed_after_claim(FAIL).snapshot(a="dead").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "dead_lettered"} and verdict.counts["lost"] == 0


def test_under_redeliver_the_same_dead_letter_is_an_alarm() -> None:
    verdict = judge(killed_after_claim(REDELIVER).snapshot(a="dead").events)
    assert kinds(verdict) == [("dead_lettered", "a")]


def test_under_fail_a_healthy_job_dead_without_its_owner_dying_is_an_alarm() -> None:
    h = History(FAIL).enqueue("a", fail=False).claim("a", "w1").ack("a", "w1", ok=False)
    verdict = judge(h.snapshot(a="dead").events)
    assert kinds(verdict) == [("dead_lettered", "a")]
    assert "max_attempts = 3" in verdict.violations[0].message


def test_under_fail_a_dead_owners_job_gone_without_a_record_is_lost() -> None:
    verdict = judge(killed_after_claim(FAIL).snapshot(a="absent").events)
    assert kinds(verdict) == [("lost", "a")]
    assert "on_owner_loss = fail, but the queue kept no record of its failure" in verdict.violations[0].message


def test_under_fail_a_dead_owners_job_still_pending_past_the_bound_is_stuck() -> None:
    verdict = judge(killed_after_claim(FAIL).snapshot(a="pending").events)
    assert kinds(verdict) == [("stuck", "a")]


def test_under_fail_a_dead_owners_job_pending_within_the_bound_is_unsettled() -> None:
    h = killed_after_claim(FAIL).snapshot_with(dt=0.5, a={"state": "pending"})
    verdict = judge(h.events)
    assert verdict.verdict == "inconclusive" and verdict.jobs == {"a": "unsettled"}, verdict.violations


# -- redelivered_after_owner_loss ------------------------------------------------------------------


@pytest.mark.parametrize("contract", [FAIL, DROP], ids=["fail", "drop"])
def test_a_claim_after_the_owner_died_is_a_redelivery_the_contract_forbids(contract: Contract) -> None:
    verdict = judge(killed_then_redelivered(contract).events)
    assert verdict.verdict == "fail" and verdict.jobs == {"a": "completed"}
    assert kinds(verdict) == [("redelivered_after_owner_loss", "a")]
    (violation,) = verdict.violations
    assert f"on_owner_loss = {contract.on_owner_loss}" in violation.message
    assert "w2#1 claimed it" in violation.message and "w1#1" in violation.message
    assert violation.detail["fault"] == "f1" and violation.detail["owner"] == "w1"
    assert violation.detail["claimer"] == "w2" and violation.detail["after_s"] == pytest.approx(0.31, abs=0.005)
    witness = [e["kind"] for e in violation.witness]
    assert witness.index("fault") < witness.index("process.exit") < max(
        i for i, kind in enumerate(witness) if kind == events.PROBE_CLAIM)


def test_under_redeliver_a_claim_after_the_owner_died_is_the_recovery() -> None:
    verdict = judge(killed_then_redelivered(REDELIVER).events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "completed"}, verdict.violations
    assert verdict.recovery["max_s"] == pytest.approx(0.31, abs=0.01)


def test_a_restarted_owner_taking_its_job_again_is_a_redelivery() -> None:
    h = History(DROP).enqueue("a").claim("a", "w1", "t1").restart("w1").execute("a", "w1", dt=0.2)
    verdict = judge(h.snapshot(a="done").events)
    assert kinds(verdict) == [("redelivered_after_owner_loss", "a")]


def test_a_claim_made_before_the_owner_was_killed_is_no_redelivery_after_its_death() -> None:
    # w1 was stopped and its job claimed by w2 while it lived: the kill that follows took no job from it
    h = History(DROP).enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=0.5)
    h.effect("a", "w2", "t2").ack("a", "w2", "t2").kill("w1", fid="f2")
    verdict = judge(h.snapshot(a="done").events)
    assert kinds(verdict) == [], verdict.violations
    assert verdict.jobs == {"a": "completed"}


def test_a_claim_after_its_owner_gave_the_job_back_is_no_redelivery_after_its_death() -> None:
    h = History(FAIL).enqueue("a").claim("a", "w1").abandon("a", "w1", reason="handler failed").kill("w1")
    verdict = judge(h.execute("a", "w2").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations


# -- lease_scope = worker: one heartbeat extends every job its worker holds ----------------------------


def beat(h: History, job: str, worker: str, *, ok: bool = True, dt: float = 0.25) -> History:
    """A worker's heartbeat: it names one job it holds, with no job-specific token."""
    return h.record(events.probe(events.HEARTBEAT, job, worker, {"token": None, "ok": ok}), dt=dt)


def holding_two(contract: Contract) -> History:
    """w1 claims a and b; its heartbeats name only a."""
    return History(contract).enqueue("a", "b").claim("a", "w1").claim("b", "w1")


def reclaim_of_b_after_its_claims_lease(contract: Contract, *, after_last_beat_s: float) -> Verdict:
    """w1 holds a and b, beats (naming a) three times 0.5 s apart and is killed; w2 claims b
    `after_last_beat_s` after the last beat (1.4 s or more after b's claim), and a 1.0 s after it."""
    h = holding_two(contract)
    for _ in range(3):
        beat(h, "a", "w1", dt=0.5)
    h.kill("w1")
    h.execute("b", "w2", dt=after_last_beat_s - 0.03)
    h.execute("a", "w2", dt=1.0 - after_last_beat_s - 0.02 + 0.05)
    return judge(h.snapshot(a="done", b="done").events)


def test_under_a_worker_lease_a_reclaim_before_the_workers_last_heartbeat_allows_is_early() -> None:
    verdict = reclaim_of_b_after_its_claims_lease(WORKER, after_last_beat_s=0.4)
    assert kinds(verdict) == [("early_reclaim", "b")]
    assert verdict.violations[0].detail["early_s"] == pytest.approx(0.6, abs=0.01)


def test_under_a_job_lease_the_same_reclaim_follows_bs_own_lease_and_passes() -> None:
    verdict = reclaim_of_b_after_its_claims_lease(LEASE, after_last_beat_s=0.4)
    assert verdict.verdict == "pass", verdict.violations


def test_under_a_worker_lease_a_reclaim_once_the_workers_lease_ran_out_is_a_recovery() -> None:
    verdict = reclaim_of_b_after_its_claims_lease(WORKER, after_last_beat_s=0.95)
    assert verdict.verdict == "pass", verdict.violations


def beats_with_a_silence(contract: Contract, silence_s: float) -> Verdict:
    """w1 holds a and b and beats (naming a) every 0.25 s, once after `silence_s`; then completes both."""
    h = holding_two(contract)
    beat(h, "a", "w1")
    beat(h, "a", "w1", dt=silence_s)
    beat(h, "a", "w1")
    h.effect("a", "w1").ack("a", "w1").effect("b", "w1").ack("b", "w1")
    return judge(h.snapshot(a="done", b="done").events)


def test_under_a_worker_lease_a_silent_worker_leaves_a_gap_on_every_job_it_holds() -> None:
    verdict = beats_with_a_silence(WORKER, 2.0)
    assert kinds(verdict) == [("heartbeat_gap", "a"), ("heartbeat_gap", "b")]
    assert verdict.violations[1].detail["gap_s"] == pytest.approx(2.0, abs=0.01)


def test_under_a_job_lease_only_the_job_the_heartbeats_name_has_the_gap() -> None:
    assert kinds(beats_with_a_silence(LEASE, 2.0)) == [("heartbeat_gap", "a")]


def test_under_a_worker_lease_regular_heartbeats_naming_one_job_keep_both() -> None:
    assert beats_with_a_silence(WORKER, 0.25).verdict == "pass"


def long_hold_then_beat_naming_b(contract: Contract) -> Verdict:
    """w1 holds a and b for 3 s beating regularly, naming a; its last beat names b."""
    h = holding_two(contract)
    for _ in range(12):
        beat(h, "a", "w1")
    beat(h, "b", "w1")
    h.effect("a", "w1").ack("a", "w1").effect("b", "w1").ack("b", "w1")
    return judge(h.snapshot(a="done", b="done").events)


def test_under_a_worker_lease_a_heartbeat_naming_b_follows_the_workers_last_one() -> None:
    verdict = long_hold_then_beat_naming_b(WORKER)
    assert verdict.verdict == "pass", verdict.violations


def test_under_a_job_lease_b_first_extended_after_3_s_had_a_gap() -> None:
    assert kinds(long_hold_then_beat_naming_b(LEASE)) == [("heartbeat_gap", "b")]


def failed_beat_then_effects(contract: Contract, *, recovered: bool) -> Verdict:
    """w1 holds a and b; a heartbeat naming a fails (then, maybe, one succeeds); then both effects."""
    h = holding_two(contract)
    beat(h, "a", "w1")
    beat(h, "a", "w1", ok=False)
    if recovered:
        beat(h, "a", "w1")
    h.effect("b", "w1", dt=0.1).ack("b", "w1").effect("a", "w1").ack("a", "w1")
    return judge(h.snapshot(a="done", b="done").events)


def test_under_a_worker_lease_a_failed_heartbeat_is_a_known_loss_of_every_job_it_holds() -> None:
    verdict = failed_beat_then_effects(replace(WORKER, watchdog=True), recovered=False)
    assert kinds(verdict) == [("work_after_known_loss", "a"), ("work_after_known_loss", "b")]


def test_under_a_job_lease_it_is_a_known_loss_of_the_named_job_only() -> None:
    verdict = failed_beat_then_effects(replace(LEASE, watchdog=True), recovered=False)
    assert kinds(verdict) == [("work_after_known_loss", "a")]


def test_under_a_worker_lease_a_later_successful_heartbeat_ends_the_known_loss() -> None:
    verdict = failed_beat_then_effects(replace(WORKER, watchdog=True), recovered=True)
    assert verdict.verdict == "pass" and verdict.anomalies == [], verdict


def test_under_a_worker_lease_a_stale_extension_is_not_judged() -> None:
    # w1 is stopped past its lease, w2 takes the job, w1 resumes and its heartbeats keep succeeding: under a
    # job lease that is a stale extension; a worker's accepted heartbeat proves only its own lease renewed
    def stopped_owner(contract: Contract) -> Verdict:
        h = History(contract).enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.2)
        h.heal("w1", dt=0.1)
        for _ in range(3):
            beat(h, "a", "w1")
        h.abandon("a", "w1", "t1", reason="lost").effect("a", "w2", "t2").ack("a", "w2", "t2")
        return judge(h.snapshot(a="done").events)

    assert kinds(stopped_owner(LEASE)) == [("stale_extension_accepted", "a")]
    assert stopped_owner(WORKER).verdict == "pass"
