"""A job with several effects is settled only on evidence of a completion too (issue 33, item 4): a job
redelivered (or overlapped) whose last owner then died holding it, left out by a snapshot that skips
in-flight jobs, was counted `redelivered` and the run passed. It is `unknown` now, unless a completion is
proven: an accepted ack from any execution of it, the control's `completion()` answer (accepted, or done:
the queue completed the job by whose ack it does not record), the queue's record, or a snapshot showing
it done. A violation the effects prove alone (several effects under exactly-once) needs no completion."""

from __future__ import annotations

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from tests.history import History

OVERLAP = Contract(recovery_bound_s=2.0, overlap="after-lease-loss")  # a silent owner's job is taken meanwhile
EXACTLY_ONCE = Contract(recovery_bound_s=2.0, delivery="exactly-once-effect")


def redelivered_then_killed(contract: Contract | None = None) -> History:
    """w1 claims a, makes its effect and is killed before its ack; w2 claims it again, makes its effect, a
    gate holds it there and it is killed too. Nobody acks a, and nobody claims it after."""
    h = History(contract) if contract is not None else History()
    h.enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").kill("w1")
    h.armed("g2", "after:effect", "a").claim("a", "w2", "t2").effect("a", "w2", "t2").matched("g2", "a", "w2")
    return h.kill("w2", "f2", gate="g2").add(events.GATE_RELEASED, "a", gate="g2")


def overlapped_then_killed() -> History:
    """w1 is stopped after its claim; w2 takes a, makes its effect and is killed before its ack; w1 resumes,
    makes its effect too, and the queue refuses its stale ack."""
    h = History(OVERLAP).enqueue("a").claim("a", "w1", "t1").stop("w1")
    h.armed("g2", "after:effect", "a").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2")
    h.matched("g2", "a", "w2").kill("w2", "f2", gate="g2").add(events.GATE_RELEASED, "a", gate="g2")
    return h.heal("w1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=False)


def unacked_twice(answer: str | None, token: str = "t2") -> History:
    """Two executions of a, one after the other, each acking with ok null (the library acks out of the
    handler's sight); the control answers `answer` about w2's ack under `token` (None: never asked)."""
    h = History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=None)
    h.claim("a", "w2", "t2").effect("a", "w2", "t2").ack("a", "w2", "t2", ok=None)
    if answer is not None:
        h.record(events.completion("a", "w1", "t1", answer)).record(events.completion("a", "w2", token, answer))
    return h


def unproven(verdict: Verdict) -> str:
    (note,) = [n for n in verdict.notes if n.startswith("a made 2 effects, but no completion of it is proven")]
    return note


def test_a_redelivered_job_whose_second_owner_died_hidden_by_the_snapshot_is_unknown() -> None:
    verdict = judge(redelivered_then_killed().snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"}, verdict.notes
    assert verdict.counts["redelivered"] == 0 and verdict.counts["unknown"] == 1
    assert verdict.verdict == "inconclusive" and verdict.exit_code == 4
    assert "its owner w2#1 died holding it (fault f2, kill w2)" in unproven(verdict)


def test_an_overlapped_job_whose_last_owner_died_hidden_by_the_snapshot_is_unknown() -> None:
    verdict = judge(overlapped_then_killed().snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"} and verdict.verdict == "inconclusive", verdict.notes
    assert "its owner w2#1 died holding it" in unproven(verdict)


def test_near_miss_the_same_job_the_snapshot_shows_claimed_is_stuck() -> None:
    verdict = judge(redelivered_then_killed().snapshot(a="claimed").events)
    assert [(v.kind, v.job) for v in verdict.violations] == [("stuck", "a")]


def test_near_miss_the_second_owners_accepted_ack_proves_the_redelivered_job_completed() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").kill("w1")
    verdict = judge(h.claim("a", "w2", "t2").effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="absent").events)
    assert verdict.jobs == {"a": "redelivered"} and verdict.verdict == "pass", verdict.notes


def test_near_miss_the_first_owners_accepted_ack_proves_the_overlapped_job_completed() -> None:
    # as overlapped_then_killed, but the stale owner's ack is the one the queue took (stale_ack = accepted)
    h = History(Contract(recovery_bound_s=2.0, overlap="after-lease-loss", stale_ack="accepted"))
    h.enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2")
    h.kill("w2", "f2").heal("w1").effect("a", "w1", "t1").ack("a", "w1", "t1")
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.jobs == {"a": "overlapped"} and verdict.verdict == "pass", (verdict.notes, verdict.violations)


def test_near_miss_the_queues_record_of_a_completion_proves_it() -> None:
    h = redelivered_then_killed().queue(events.QUEUE_CLAIM, "a", "w2", 1, "t2")
    verdict = judge(h.queue(events.QUEUE_COMPLETE, "a", "w2", 2, "t2").snapshot(a="absent").events)
    assert verdict.jobs == {"a": "redelivered"} and verdict.verdict == "pass", verdict.notes


def test_near_miss_a_snapshot_that_shows_it_done_proves_it() -> None:
    verdict = judge(redelivered_then_killed().snapshot(a="done").events)
    assert verdict.jobs == {"a": "redelivered"} and verdict.verdict == "pass", verdict.notes


def test_several_effects_under_exactly_once_are_a_violation_without_any_completion() -> None:
    verdict = judge(redelivered_then_killed(EXACTLY_ONCE).snapshot(a="absent").events)
    assert verdict.verdict == "fail" and ("redelivered", "a") in [(v.kind, v.job) for v in verdict.violations]


def test_the_controls_done_answer_proves_the_job_completed_and_judges_neither_ack() -> None:
    # two acks the workers could not vouch for; the queue completed the job but keeps no record of whose ack
    verdict = judge(unacked_twice("done").snapshot(a="absent").events)
    assert verdict.jobs == {"a": "redelivered"} and verdict.verdict == "pass", verdict.notes
    assert verdict.evidence["completions"] == "probes and control"


@pytest.mark.parametrize("answer", ["unknown", None])
def test_acks_the_control_could_not_answer_prove_no_completion(answer: str | None) -> None:
    verdict = judge(unacked_twice(answer).snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"} and verdict.verdict == "inconclusive"
    assert "died holding it" not in unproven(verdict), "no owner died"


def test_near_miss_a_done_answer_about_a_token_nobody_acked_proves_nothing() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=None)
    h.claim("a", "w2", "t2").effect("a", "w2", "t2").ack("a", "w2", "t2", ok=None)
    h.record(events.completion("a", "w2", "t9", "done"))
    assert judge(h.snapshot(a="absent").events).jobs == {"a": "unknown"}


def test_a_done_answer_about_a_stale_owners_ack_is_no_stale_ack() -> None:
    # near miss of test_control_completions' stale ack: "done" says the job completed, not that this ack did
    h = History(OVERLAP).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").stop("w1")
    h.claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2", ok=None)
    h.heal("w1", dt=0.2).ack("a", "w1", "t1", ok=None)
    h.record(events.completion("a", "w1", "t1", "done")).record(events.completion("a", "w2", "t2", "done"))
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.verdict == "pass" and not verdict.violations, [v.message for v in verdict.violations]
    assert verdict.jobs == {"a": "redelivered"}
