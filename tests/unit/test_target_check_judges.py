"""The target check's judges of its fault paths (`chaos.authoring.fault_paths`, issue 34 item 8), on what a
check run saw: each seam's trigger and its near miss."""

from __future__ import annotations

import dataclasses

from chaos.authoring import fault_paths
from chaos.contract import Contract
from chaos.events import Event
from tests.history import AT_LEAST_ONCE, History

DROP = dataclasses.replace(AT_LEAST_ONCE, on_owner_loss="drop")
ONE_ATTEMPT = dataclasses.replace(AT_LEAST_ONCE, max_attempts=1)


def kill(state: str, shows_deliveries: bool = True, contract: Contract = AT_LEAST_ONCE) -> tuple[list[str], list[str]]:
    passed: list[str] = []
    problems: list[str] = []
    fault_paths.judge_kill(passed, problems, "job-0002", "w1", state, shows_deliveries, contract)
    return passed, problems


def test_a_dead_owners_job_the_snapshot_drops_or_calls_done_is_named() -> None:
    for state in ("absent", "done"):
        _, problems = kill(state)
        assert problems and problems[0].startswith("After w1 was SIGKILLed holding job-0002"), problems
        assert f"showed it {state}, not claimed or pending" in problems[0]


def test_near_miss_claimed_pending_or_what_the_contract_allows() -> None:
    assert not kill("claimed")[1] and not kill("pending")[1]
    assert not kill("absent", shows_deliveries=False)[1], "a queue that shows no deliveries may not list it"
    assert not kill("absent", contract=DROP)[1], "on_owner_loss = drop: gone is what it promised"
    assert kill("done", shows_deliveries=False)[1], "never done: nobody acked it"


def failing(*steps: str, reason: str = "handler failed") -> list[Event]:
    h = History(faults=[]).enqueue("job-0003", fail=True).start("w2")
    for step in steps:
        if step == "claim":
            h.claim("job-0003", "w2", f"t{len(h.events)}")
        elif step == "abandon":
            h.abandon("job-0003", "w2", f"t{len(h.events) - 1}", reason=reason)
    return h.events


def failure(ledger: list[Event], contract: Contract = AT_LEAST_ONCE,
            retried: Event | str | None = None) -> tuple[list[str], list[str]]:
    passed: list[str] = []
    problems: list[str] = []
    given_up = next((e for e in ledger if fault_paths.gave_up("job-0003")(e)), None)
    fault_paths.judge_failure(passed, problems, "job-0003", ledger, given_up, retried, contract)
    return passed, problems


def test_a_failed_job_never_retried_is_named() -> None:
    _, problems = failure(failing("claim", "abandon"))
    assert problems and problems[0].startswith("No worker claimed job-0003 again after w2 gave it up (an abandon)")


def test_near_miss_a_retry_claim_or_a_dead_letter_under_one_attempt() -> None:
    ledger = failing("claim", "abandon", "claim")
    passed, problems = failure(ledger, retried=ledger[-1])
    assert not problems and passed[-1].startswith("w2 claimed job-0003 again"), (passed, problems)
    assert not failure(failing("claim", "abandon"), ONE_ATTEMPT, retried="dead")[1]
    assert failure(failing("claim", "abandon"), ONE_ATTEMPT)[1][0].startswith("The contract allows one attempt")


def test_a_failure_abandoned_as_lost_or_not_reported_is_named() -> None:
    lost = failure(failing("claim", "abandon", "claim", reason="lost"))[1]
    assert lost and "abandoned the failing job-0003 with reason 'lost'" in lost[0]
    silent = failure(failing("claim"))[1]
    assert silent and silent[0].startswith("No abandon (nor an ack with ok=false) for job-0003")


def completion(ok: object, answer: str, keeps_none: bool = False,
               source: str = "queue") -> tuple[list[str], list[str]]:
    passed: list[str] = []
    problems: list[str] = []
    fault_paths.judge_completion(passed, problems, "job-0001", "w1", ok, (answer, source), keeps_none)
    return passed, problems


def test_a_completion_the_control_cannot_see_is_named() -> None:
    for ok, answer, keeps_none in ((True, "unknown", False), (None, "unknown", True), (True, "refused", False)):
        problems = completion(ok, answer, keeps_none)[1]
        assert problems and "a completion the control cannot see" in problems[0], (ok, answer, problems)


def test_near_miss_an_answer_that_agrees_or_a_control_that_keeps_no_record() -> None:
    assert not completion(True, "accepted")[1] and not completion(None, "done")[1]
    assert not completion(True, "unknown", keeps_none=True)[1], "the worker's ok=true vouches for the ack"


def test_a_result_store_that_holds_no_result_is_a_completion_the_control_cannot_see() -> None:
    problems = completion(None, "unknown", source="result-store")[1]
    assert problems and "answered 'unknown' (from a result store" in problems[0], problems


def test_near_miss_a_result_stores_accepted_proves_the_job_completed_not_the_ack() -> None:
    """The Celery controls answer ("accepted", "result-store"): the task ran to completion. That completes
    the job for the check, as done does, and leaves the ack to the worker's report (the broker's answer)."""
    for ok, judged in ((True, "with ok=True, which decides the ack"), (None, "with ok null, and the control says "
                                                                          "a result store")):
        passed, problems = completion(ok, "accepted", source="result-store")
        assert not problems and judged in passed[0], (ok, passed, problems)
        assert "holds its result: that proves job-0001 completed" in passed[0], passed


def test_a_wrong_token_is_named_and_the_right_one_passes() -> None:
    h = History(faults=[]).enqueue("job-0001").start("w1").claim("job-0001", "w1", "t1")
    right = list(h.effect("job-0001", "w1", "t1").events)
    passed: list[str] = []
    problems: list[str] = []
    assert not fault_paths.judge_tokens(passed, problems, right, worker_leases=False) and not problems
    wrong = right + [h.ack("job-0001", "w1", "t2").events[-1]]
    assert fault_paths.judge_tokens(passed, problems, wrong, worker_leases=False)
    assert problems[0].startswith("A wrong token: the ack of job-0001 by w1"), problems
