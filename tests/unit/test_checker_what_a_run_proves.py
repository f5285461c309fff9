"""A run that proves nothing is inconclusive, never a pass (issue 17, item 3); a stranger's refused request
is reported but is no verdict on the queue (item 5)."""

from __future__ import annotations

from chaos import events
from chaos.check.checker import judge
from tests.history import History


def test_a_run_that_enqueued_no_job_is_inconclusive() -> None:
    verdict = judge(History(faults=[]).start("w1").snapshot().events)
    assert verdict.verdict == "inconclusive"
    assert any("no job was enqueued" in note for note in verdict.notes), verdict.notes


def test_a_declared_fault_never_injected_is_inconclusive() -> None:
    verdict = judge(History(faults=["kill"]).enqueue("a").start("w1").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "inconclusive"
    assert any("declares the fault(s) kill" in note for note in verdict.notes), verdict.notes


def test_each_declared_kind_must_be_injected() -> None:
    h = History(faults=["stop", "kill"]).enqueue("a").start("w1").claim("a", "w1").stop("w1").heal("w1")
    verdict = judge(h.effect("a", "w1").ack("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "inconclusive"
    assert any("declares the fault(s) kill " in note for note in verdict.notes), verdict.notes


def test_a_waived_kind_needs_no_injection() -> None:
    h = History(faults=["stop", "kill"]).enqueue("a").start("w1").claim("a", "w1").stop("w1").heal("w1")
    h.record(events.fault_waived("kill", "no lease: no next owner to kill"))
    verdict = judge(h.effect("a", "w1").ack("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.notes


def test_a_run_with_no_declared_fault_and_jobs_done_passes() -> None:
    verdict = judge(History(faults=[]).enqueue("a").start("w1").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.notes


def test_a_violation_still_fails_a_run_that_proved_nothing_else() -> None:
    h = History(faults=["kill"]).enqueue("a").start("w1").start("w2", 4343)
    h.claim("a", "w1").claim("a", "w2").effect("a", "w1").effect("a", "w2").ack("a", "w2")
    assert judge(h.snapshot(a="done").events).verdict == "fail"


def refused(h: History, status: int, error: str) -> History:
    return h.record(events.probe_refused(status, error, "/probe/claim"))


def test_a_request_without_the_run_token_is_reported_but_does_not_veto_the_run() -> None:
    h = History(faults=[]).enqueue("a").start("w1").claim("a", "w1")
    refused(h, 401, "missing or wrong X-Chaos-Token")
    verdict = judge(h.effect("a", "w1").ack("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass", (verdict.error, verdict.notes)
    assert [(r["from"], r["status"]) for r in verdict.refused] == [("stranger", 401)]
    assert any("no valid run token" in note for note in verdict.notes), verdict.notes


def test_a_refused_probe_from_a_worker_with_the_token_is_still_an_error() -> None:
    h = History(faults=[]).enqueue("a").start("w1").claim("a", "w1")
    refused(h, 401, "missing or wrong X-Chaos-Token")
    refused(h, 400, "field 'token' of a claim probe must be a string")
    verdict = judge(h.effect("a", "w1").ack("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "error"
    assert verdict.error is not None and "field 'token'" in verdict.error and "X-Chaos-Token" not in verdict.error
    assert [r["from"] for r in verdict.refused] == ["stranger", "worker"]


def test_workers_that_only_ever_sent_a_wrong_token_are_a_harness_error_naming_it() -> None:
    h = History(faults=[]).enqueue("a").start("w1")
    refused(h, 401, "missing or wrong X-Chaos-Token")
    verdict = judge(h.snapshot(a="pending").events)
    assert verdict.verdict == "error"
    assert verdict.error is not None and "401 missing or wrong X-Chaos-Token" in verdict.error
