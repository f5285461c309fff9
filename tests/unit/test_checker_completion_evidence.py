"""A job is completed only on evidence of a completion (issue 33): an ack the queue accepted, the control's
`completion()` answer, the queue's own record, or a final snapshot that shows it done. A job the snapshot
leaves out is not one: a snapshot that skips in-flight jobs turned a killed owner's stuck job into a
completed one, and a broken target passed. Each source has a near miss that still completes the job."""

from __future__ import annotations

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from tests.history import History


def killed_after_effect() -> History:
    """kill_after_effect_before_ack on a queue with no recovery: w1 claims a and makes its effect, a gate
    holds it, and it is SIGKILLed; nobody claims a again and nobody acks it."""
    h = History().enqueue("a").armed("g1", "after:effect", "a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    return h.matched("g1", "a", "w1").kill("w1", gate="g1").add(events.GATE_RELEASED, "a", gate="g1")


def acked(ok: bool | None) -> History:
    """w1 claims, effects and acks a; the ack says `ok` (None: the worker could not learn the outcome)."""
    return History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=ok)


def unproven(verdict: Verdict, job: str = "a") -> str:
    """The note that says the job's completion is not proven (the run's only such note)."""
    (note,) = [n for n in verdict.notes if n.startswith(f"{job} made its effect, but no completion")]
    return note


def test_a_killed_owners_job_the_snapshot_leaves_out_is_unknown_not_completed() -> None:
    verdict = judge(killed_after_effect().snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"}
    assert verdict.counts["completed"] == 0 and verdict.counts["unknown"] == 1
    assert verdict.verdict == "inconclusive" and verdict.exit_code == 4
    note = unproven(verdict)
    assert "the final snapshot shows it absent, not done" in note
    assert "its owner w1#1 died holding it (fault f1, kill w1)" in note
    assert "`chaos target check`" in note


def test_near_miss_the_same_job_the_snapshot_shows_claimed_is_stuck() -> None:
    verdict = judge(killed_after_effect().snapshot(a="claimed").events)
    assert [(v.kind, v.job) for v in verdict.violations] == [("stuck", "a")]


def test_near_miss_the_queues_record_of_a_completion_proves_it() -> None:
    # the queue committed w1's completion just before the kill landed, and its ack probe never left
    h = killed_after_effect().queue(events.QUEUE_CLAIM, "a", "w1", 1, "t1")
    h.queue(events.QUEUE_COMPLETE, "a", "w1", 2, "t1")
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.jobs == {"a": "completed"} and verdict.verdict == "pass", verdict.notes


def test_near_miss_a_snapshot_that_shows_it_done_proves_it() -> None:
    verdict = judge(killed_after_effect().snapshot(a="done").events)
    assert verdict.jobs == {"a": "completed"} and verdict.verdict == "pass", verdict.notes


def test_near_miss_an_ack_the_queue_accepted_proves_it_for_a_queue_that_deletes_completed_jobs() -> None:
    verdict = judge(acked(True).snapshot(a="absent").events)
    assert verdict.jobs == {"a": "completed"} and verdict.verdict == "pass", verdict.notes


@pytest.mark.parametrize("ok", [False, None])
def test_an_ack_refused_or_of_unknown_outcome_proves_no_completion(ok: bool | None) -> None:
    verdict = judge(acked(ok).snapshot(a="absent").events)
    assert verdict.jobs == {"a": "unknown"} and verdict.verdict == "inconclusive"
    assert "died holding it" not in unproven(verdict), "its owner did not die"


@pytest.mark.parametrize("answer, outcome", [("accepted", "completed"), ("unknown", "unknown"),
                                             ("refused", "unknown")])
def test_the_controls_answer_on_an_ack_of_unknown_outcome_decides(answer: str, outcome: str) -> None:
    h = acked(None).record(events.completion("a", "w1", "t1", answer))
    verdict = judge(h.snapshot(a="absent").events)
    assert verdict.jobs == {"a": outcome}, verdict.notes


def test_near_miss_the_controls_answer_about_another_token_proves_nothing() -> None:
    h = acked(None).record(events.completion("a", "w1", "t9", "accepted"))
    assert judge(h.snapshot(a="absent").events).jobs == {"a": "unknown"}


def test_an_unproven_job_hides_no_violation_of_another() -> None:
    verdict = judge(killed_after_effect().enqueue("b").snapshot(a="absent", b="absent").events)
    assert verdict.verdict == "fail" and [(v.kind, v.job) for v in verdict.violations] == [("lost", "b")]
    assert unproven(verdict), "the unknown job is still named"


def test_without_a_final_snapshot_no_job_gets_the_unproven_note() -> None:
    h = killed_after_effect()
    verdict = judge(h.record(events.run_end("ok", "")).events)
    assert verdict.jobs == {"a": "unknown"} and verdict.verdict == "inconclusive"
    assert not [n for n in verdict.notes if "no completion of it is proven" in n], verdict.notes

