"""A claim after the queue accepted a completion of the same job (issue 34, item 1): a violation under every
delivery contract unless the contract allows it; a redelivery after a lost, refused or racing ack is not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.contract import Contract
from chaos.errors import ConfigError
from tests.history import AT_LEAST_ONCE, History
from tests.unit.test_checker_anomalies import LEASE

RERUN = "claim_after_completion"


def kinds(verdict: Verdict) -> list[str]:
    return [v.kind for v in verdict.violations]


def rerun_after(ok: bool | None, contract: Contract = AT_LEAST_ONCE) -> History:
    """w1 completes `a` (its ack answered `ok`), then the queue hands `a` to w2, which runs it again."""
    h = History(contract).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1", ok=ok)
    return h.claim("a", "w2", "t2", dt=0.3).effect("a", "w2", "t2").ack("a", "w2", "t2")


@pytest.mark.parametrize("delivery", ["at-least-once", "at-most-once", "exactly-once-effect"])
def test_a_claim_after_an_accepted_ack_is_a_violation_under_every_delivery_contract(delivery: str) -> None:
    verdict = judge(rerun_after(True, replace(AT_LEAST_ONCE, delivery=delivery)).snapshot(a="done").events)
    assert verdict.verdict == "fail"
    assert RERUN in kinds(verdict)
    (violation,) = [v for v in verdict.violations if v.kind == RERUN]
    assert "w2#1 claimed it" in violation.message and "the ack of w1#1" in violation.message
    assert violation.detail["completed_by"] == "w1" and violation.detail["claimer"] == "w2"
    assert violation.detail["source"] == "ack" and violation.detail["after_s"] == pytest.approx(0.3, abs=0.01)
    assert violation.witness[0]["kind"] == "probe.ack"  # the witness starts at the accepted completion


@pytest.mark.parametrize("ok", [False, None])
def test_a_redelivery_after_a_refused_or_unknown_ack_is_at_least_once(ok: bool | None) -> None:
    verdict = judge(rerun_after(ok).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs["a"] == "redelivered"


def test_a_redelivery_after_no_ack_at_all_is_at_least_once() -> None:
    h = History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").kill("w1")
    verdict = judge(h.execute("a", "w2").snapshot(a="done").events)
    assert RERUN not in kinds(verdict), verdict.violations


def test_a_claim_the_ledger_records_before_the_accepted_ack_raced_it() -> None:
    # w1's lease ran out and w2 claimed; w1's ack, accepted, is reported after that claim: a stale ack (its own
    # rule), never a claim after completion
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.claim("a", "w2", "t2", dt=1.5).ack("a", "w1", "t1").effect("a", "w2", "t2").ack("a", "w2", "t2")
    verdict = judge(h.snapshot(a="done").events)
    assert RERUN not in kinds(verdict), verdict.violations
    assert "stale_ack_accepted" in kinds(verdict)


def test_the_controls_answer_that_the_ack_was_accepted_proves_the_completion() -> None:
    h = rerun_after(None)
    h.add("control.completion", "a", "w1", token="t1", outcome="accepted")
    verdict = judge(h.snapshot(a="done").events)
    (violation,) = [v for v in verdict.violations if v.kind == RERUN]
    assert violation.detail["source"] == "control" and "by the control's answer" in violation.message


def test_the_queues_record_of_a_claim_after_its_completion_is_a_violation() -> None:
    # the workers could not learn their acks' outcome (ok null); the queue's record orders the commits
    h = History().enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.ack("a", "w1", "t1", ok=None).queue(events.QUEUE_COMPLETE, "a", "w1", 2, "t1")
    h.queue(events.QUEUE_CLAIM, "a", "w2", 3).claim("a", "w2", "t2").effect("a", "w2", "t2")
    h.ack("a", "w2", "t2", ok=None)
    h.queue(events.QUEUE_COMPLETE, "a", "w2", 4, "t2")
    verdict = judge(h.snapshot(a="done").events)
    (violation,) = [v for v in verdict.violations if v.kind == RERUN]
    assert violation.detail["source"] == "queue" and "queue's own record" in violation.message


def test_the_queues_record_of_a_release_and_a_new_claim_before_any_completion_is_fine() -> None:
    h = History().enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1").kill("w1")
    h.queue(events.QUEUE_RELEASE, "a", "w1", 2).queue(events.QUEUE_CLAIM, "a", "w2", 3)
    h.claim("a", "w2", "t2").effect("a", "w2", "t2")
    h.ack("a", "w2", "t2", ok=None).queue(events.QUEUE_COMPLETE, "a", "w2", 4, "t2")
    verdict = judge(h.snapshot(a="done").events)
    assert RERUN not in kinds(verdict), verdict.violations


def test_a_contract_that_allows_re_runs_lists_it_as_an_anomaly() -> None:
    contract = replace(AT_LEAST_ONCE, rerun_after_completion="allowed")
    verdict = judge(rerun_after(True, contract).snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert [a["kind"] for a in verdict.anomalies] == [RERUN]
    assert "allowed: rerun_after_completion = allowed" in verdict.anomalies[0]["message"]


def test_the_contract_key_is_validated_with_its_meaning() -> None:
    with pytest.raises(ConfigError, match="rerun_after_completion = 'sometimes'.*forbidden, allowed.*completion"):
        Contract.from_dict({"recovery_bound_s": 1.0, "rerun_after_completion": "sometimes"}, "t")
    assert Contract.from_dict({"recovery_bound_s": 1.0}, "t").rerun_after_completion == "forbidden"


def test_a_stale_owners_accepted_ack_is_no_completion_to_re_run() -> None:
    # near miss: SQS accepts a delete with an old receipt handle and keeps the message (stale_ack = accepted);
    # w1's lease ran out, w2 took the job and died, w3 recovered it after w1's stale ack: a recovery, no re-run
    contract = replace(LEASE, stale_ack="accepted")
    h = History(contract).enqueue("a").claim("a", "w1", "t1").claim("a", "w2", "t2", dt=1.3)
    h.effect("a", "w1", "t1").ack("a", "w1", "t1").kill("w2")
    h.claim("a", "w3", "t3", dt=1.0).effect("a", "w3", "t3").ack("a", "w3", "t3")
    verdict = judge(h.snapshot(a="done").events)
    assert RERUN not in kinds(verdict), verdict.violations
    assert "stale_ack_accepted" in [a["kind"] for a in verdict.anomalies]
