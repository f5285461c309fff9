"""A probe whose token no claim opened is the target's harness error, naming the probe (issue 34, item 7): an
abandon with a wrong token once made a run inconclusive with "the ack or abandon did not happen" although
one had arrived. Each trigger has its near miss: the same ledger with a token some claim did open."""

from __future__ import annotations

import dataclasses

from chaos import events
from chaos.check.checker import judge
from tests.history import AT_LEAST_ONCE, History

WORKER_LEASES = dataclasses.replace(AT_LEAST_ONCE, lease_s=1.0, lease_scope="worker")


def failed_then_retried(abandon_token: str) -> History:
    """A handler failure: w1's claim, its abandon (with `abandon_token`), w2's retry claim that completes."""
    h = History(faults=[]).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1", "t1")
    h.abandon("a", "w1", abandon_token, reason="handler failed")
    return h.claim("a", "w2", "t2").effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done")


def test_an_abandon_with_a_token_no_claim_opened_is_a_harness_error_naming_it() -> None:
    verdict = judge(failed_then_retried("wrong").events)
    assert verdict.verdict == "error", verdict
    error = verdict.error or ""
    assert "abandon of a by w1" in error and "'wrong'" in error, error
    assert "w1's claims of a opened the token(s) 't1'" in error, error


def test_near_miss_the_abandon_with_its_claims_token_passes() -> None:
    verdict = judge(failed_then_retried("t1").events)
    assert verdict.verdict == "pass", (verdict.error, verdict.notes)


def test_an_ack_with_another_workers_token_is_stray() -> None:
    h = History(faults=[]).enqueue("a").start("w1").start("w2", 4343).claim("a", "w1", "t1")
    h.abandon("a", "w1", "t1", reason="handler failed").claim("a", "w2", "t2").effect("a", "w2", "t2")
    verdict = judge(h.ack("a", "w2", "t1").snapshot(a="done").events)
    assert verdict.verdict == "error" and "ack of a by w2" in (verdict.error or ""), verdict.error
    assert "w2's claims of a opened the token(s) 't2'" in (verdict.error or "")


def test_an_effect_of_a_job_the_worker_never_claimed_is_stray() -> None:
    h = History(faults=[]).enqueue("a").start("w1").execute("a", "w1").effect("a", "w2", "t9")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "error" and "w2 never claimed a" in (verdict.error or ""), verdict.error


def test_near_miss_a_probe_without_a_token_is_matched_by_its_worker() -> None:
    h = History(faults=[]).enqueue("a").start("w1").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.record(events.probe(events.ACK, "a", "w1", {"token": None, "ok": True}))
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", (verdict.error, verdict.notes)


def test_near_miss_tokens_compare_as_text() -> None:
    h = History(faults=[]).enqueue("a").start("w1")
    h.record(events.probe(events.CLAIM, "a", "w1", {"token": 7}))
    h.record(events.probe(events.EFFECT, "a", "w1", {"token": "7", "key": "a", "accepted": True}))
    h.record(events.probe(events.ACK, "a", "w1", {"token": 7, "ok": True}))
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", (verdict.error, verdict.notes)


def test_near_miss_a_claim_reported_after_its_effect_still_opens_its_token() -> None:
    h = History(faults=[]).enqueue("a").start("w1").effect("a", "w1", "t1").claim("a", "w1", "t1")
    verdict = judge(h.ack("a", "w1", "t1").snapshot(a="done").events)
    assert verdict.error is None or "match no execution" not in verdict.error, verdict.error


def test_a_job_scoped_heartbeat_with_a_stray_token_is_an_error() -> None:
    h = History(AT_LEAST_ONCE, faults=[]).enqueue("a").start("w1").claim("a", "w1", "t1").heartbeat("a", "w1", "t0")
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events)
    assert verdict.verdict == "error" and "heartbeat of a by w1" in (verdict.error or ""), verdict.error


def test_near_miss_a_worker_scoped_heartbeat_may_name_any_job_and_token() -> None:
    """lease_scope = worker: the heartbeat is the worker's; the job and token it names are not its claim's."""
    h = History(WORKER_LEASES, faults=[]).enqueue("a").start("w1").claim("a", "w1", "t1")
    h.heartbeat("a", "w1", "worker-w1")
    verdict = judge(h.effect("a", "w1", "t1").ack("a", "w1", "t1").snapshot(a="done").events, WORKER_LEASES)
    assert verdict.verdict == "pass", (verdict.error, verdict.notes)


def test_the_error_lists_the_first_three_and_counts_the_rest() -> None:
    h = History(faults=[]).enqueue("a").start("w1").claim("a", "w1", "t1")
    for n in range(5):
        h.effect("a", "w1", f"x{n}")
    verdict = judge(h.ack("a", "w1", "t1").snapshot(a="done").events)
    assert "and 2 more" in (verdict.error or "") and "'x3'" not in (verdict.error or ""), verdict.error
