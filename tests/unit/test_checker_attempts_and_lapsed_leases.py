"""Contract promises real libraries make (issue 34): an owner loss that spends an attempt
(owner_loss_counts_attempt) and a lease nobody renews (lease_s without heartbeat_s), after which a reclaim
from a live owner is no premature_reclaim. Each rule has a ledger that triggers it and a near miss."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chaos.check.checker import judge
from chaos.contract import Contract
from chaos.errors import ConfigError
from tests.history import AT_LEAST_ONCE, History
from tests.unit.test_checker_anomalies import LEASE, kinds

COUNTS = replace(AT_LEAST_ONCE, max_attempts=2, owner_loss_counts_attempt=True)  # pg_lifeline's rescuer
UNCOUNTED = replace(COUNTS, owner_loss_counts_attempt=False)
AGE_LEASE = replace(LEASE, heartbeat_s=None)  # a lease nobody renews: rescue by age (lease 1 s)
AGE_LEASE_NEVER = replace(AGE_LEASE, overlap="never")


def killed_twice(contract: Contract, kills: int = 2) -> History:
    """A healthy job whose owner is SIGKILLed after each claim, `kills` times, and which ends dead."""
    h = History(contract).enqueue("a", fail=False)
    for n in range(1, kills + 1):
        h.claim("a", f"w{n}", dt=0.3).kill(f"w{n}", f"f{n}")
    return h.snapshot_with(a={"state": "dead", "attempts": kills})


# -- owner_loss_counts_attempt -------------------------------------------------------------------------


def test_the_key_is_a_boolean_that_needs_max_attempts() -> None:
    assert Contract.from_dict({"recovery_bound_s": 2.0}, "t").owner_loss_counts_attempt is False
    assert Contract.from_dict(COUNTS.to_dict(), "t") == COUNTS
    for raw in ({"owner_loss_counts_attempt": "yes"}, {"owner_loss_counts_attempt": True}):
        with pytest.raises(ConfigError) as caught:
            Contract.from_dict({"recovery_bound_s": 2.0, **raw}, "target.toml")
        message = str(caught.value)
        assert "\n" not in message and "contract owner_loss_counts_attempt = " in message
        assert "true only with max_attempts" in message


def test_a_healthy_job_dead_after_max_attempts_owner_losses_is_the_promise_kept() -> None:
    verdict = judge(killed_twice(COUNTS).events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "dead_lettered"}


def test_without_the_key_the_same_dead_letter_is_an_alarm() -> None:
    verdict = judge(killed_twice(UNCOUNTED).events)
    assert kinds(verdict) == [("dead_lettered", "a")]
    assert "not a poison job" in verdict.violations[0].message


def test_a_healthy_job_dead_sooner_than_max_attempts_is_still_an_alarm() -> None:
    verdict = judge(killed_twice(COUNTS, kills=1).events)
    assert kinds(verdict) == [("dead_lettered", "a")]
    assert "dead-lettered after 1 attempt(s)" in verdict.violations[0].message
    assert "max_attempts = 2" in verdict.violations[0].message


def test_an_attempt_that_did_not_lose_its_owner_spent_no_owner_loss() -> None:
    # w1's healthy handler "failed" (it released the job itself): that is no owner loss, the dead letter an alarm
    h = History(COUNTS).enqueue("a", fail=False).claim("a", "w1").abandon("a", "w1", reason="handler failed")
    h.claim("a", "w2", dt=0.3).kill("w2")
    verdict = judge(h.snapshot_with(a={"state": "dead", "attempts": 2}).events)
    assert kinds(verdict) == [("dead_lettered", "a")]
    assert "not every attempt lost its owner (owner_loss_counts_attempt)" in verdict.violations[0].message


def test_an_owner_whose_ack_the_queue_refused_had_lost_its_job() -> None:
    # a slow owner rescued on its last attempt: the queue discarded the job and refused the owner's late ack
    h = History(COUNTS).enqueue("a", fail=False).claim("a", "w1").kill("w1")
    h.claim("a", "w2", dt=0.3).effect("a", "w2").ack("a", "w2", ok=False)
    verdict = judge(h.snapshot_with(a={"state": "dead", "attempts": 2}).events)
    assert verdict.verdict == "pass", verdict.violations


# -- premature_reclaim under a lease nobody renews --------------------------------------------------------


def reclaimed_from_a_live_owner(contract: Contract, after_s: float) -> History:
    """w1 claims a and works on, alive and unfaulted; w2 claims it `after_s` later and completes it; w1's
    effect comes after, and its ack is refused."""
    h = History(contract).enqueue("a").start("w1", 11).start("w2", 12).claim("a", "w1", "t1", pid=11)
    h.claim("a", "w2", "t2", pid=12, dt=after_s).effect("a", "w2", "t2").ack("a", "w2", "t2")
    h.effect("a", "w1", "t1", dt=0.2).ack("a", "w1", "t1", ok=False)
    return h.snapshot(a="done")


def test_a_reclaim_after_an_unrenewed_lease_ran_out_is_not_premature() -> None:
    # overlap = after-lease-loss: the docs' promise, the late effect an anomaly with its exposure
    verdict = judge(reclaimed_from_a_live_owner(AGE_LEASE, after_s=1.2).events)
    assert verdict.verdict == "pass", verdict.violations
    assert [a["kind"] for a in verdict.anomalies] == ["effect_after_lease_loss"]


def test_a_reclaim_within_an_unrenewed_lease_is_premature() -> None:
    verdict = judge(reclaimed_from_a_live_owner(AGE_LEASE, after_s=0.5).events)
    assert kinds(verdict) == [("premature_reclaim", "a"), ("early_reclaim", "a")]


def test_a_reclaim_from_a_live_owner_of_a_renewed_lease_is_premature_whenever_it_comes() -> None:
    # heartbeat_s promises renewal: a live, unfaulted owner's lease never runs out, so the queue took it early
    verdict = judge(reclaimed_from_a_live_owner(LEASE, after_s=1.2).events)
    assert kinds(verdict) == [("premature_reclaim", "a")]


def test_under_overlap_never_the_reclaim_is_no_premature_one_but_the_overlap_is_judged() -> None:
    verdict = judge(reclaimed_from_a_live_owner(AGE_LEASE_NEVER, after_s=1.2).events)
    assert kinds(verdict) == [("overlapped", "a"), ("effect_after_lease_loss", "a")]
