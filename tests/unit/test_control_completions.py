"""The control's word on completions (issue 18): an ack a worker reported with ok null is judged as the
target's control answered it (`Control.completion`), and the run asks the control, journaling each
definite answer once and every ack still unknown at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.errors import TargetCodeError
from chaos.ledger import Ledger
from chaos.runtime.completions import Completions
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE


def stale_owner_acks_unknowing(answer: str | None) -> History:
    """w1 is stopped past its lease, w2 takes and completes the job, w1 resumes and reports an ack it could
    not vouch for (ok null); the control then answers `answer` about it (None: it was never asked)."""
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2")
    h.heal("w1", dt=0.2).ack("a", "w1", "t1", ok=None)
    if answer is not None:
        h.record(events.completion("a", "w1", "t1", answer))
    return h.snapshot(a="done")


def test_an_unknowing_ack_the_control_says_the_queue_took_from_a_stale_owner_is_a_stale_ack() -> None:
    verdict = judge(stale_owner_acks_unknowing("accepted").events)
    assert [(v.kind, v.job) for v in verdict.violations] == [("stale_ack_accepted", "a")]
    assert verdict.evidence["completions"] == "probes and control"


@pytest.mark.parametrize("answer", ["refused", "unknown", None])
def test_an_unknowing_ack_the_control_refused_or_could_not_answer_proves_nothing_stale(answer: str | None) -> None:
    verdict = judge(stale_owner_acks_unknowing(answer).events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]
    assert verdict.evidence["completions"] == ("probes and control" if answer == "refused" else "probes")


def test_the_answer_about_another_token_is_not_taken_for_this_ack() -> None:
    # near miss: the control accepted a completion by w1's *other* execution, not the one that acked stale
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2")
    h.heal("w1", dt=0.2).ack("a", "w1", "t1", ok=None).record(events.completion("a", "w1", "t9", "accepted"))
    assert judge(h.snapshot(a="done").events).verdict == "pass"


class AnsweringControl:
    """A control whose queue took the completions listed in `accepted`; it counts the questions."""

    def __init__(self, accepted: set[tuple[str, str]], answer: str = "accepted") -> None:
        self.accepted, self.answer = accepted, answer
        self.asked: list[tuple[str, str]] = []

    def completion(self, job: str, token: str) -> str:
        self.asked.append((job, token))
        return self.answer if (job, token) in self.accepted else "unknown"


def ledger_with_acks(tmp_path: Path) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.append(events.probe(events.ACK, "a", "w1", {"token": "t1", "ok": None}))
    ledger.append(events.probe(events.ACK, "b", "w1", {"token": "t2", "ok": None}))
    ledger.append(events.probe(events.ACK, "c", "w1", {"token": "t3", "ok": True}))  # vouched for: never asked
    return ledger


def answers(ledger: Ledger) -> list[tuple[str | None, str]]:
    return [(e.job, e.data["outcome"]) for e in ledger.events() if e.kind == events.COMPLETION]


def test_the_run_asks_about_unknowing_acks_only_and_journals_each_answer_once(tmp_path: Path) -> None:
    ledger = ledger_with_acks(tmp_path)
    control = AnsweringControl({("a", "t1")})
    completions = Completions(control, ledger)  # type: ignore[arg-type]
    assert completions.accepted() == {"a"}
    assert completions.accepted() == {"a"}
    assert answers(ledger) == [("a", "accepted")], "a definite answer is journaled once; unknown waits"
    assert control.asked == [("a", "t1"), ("b", "t2"), ("b", "t2")], "an answered ack is not asked again"
    completions.finish()
    assert answers(ledger) == [("a", "accepted"), ("b", "unknown")], "the last word journals what is unknown"
    ledger.close()


def test_a_done_answer_finishes_the_job_and_is_journaled_once(tmp_path: Path) -> None:
    # the queue completed b, by whose ack it does not record (a broker after two executions acked)
    ledger = ledger_with_acks(tmp_path)
    control = AnsweringControl({("b", "t2")}, answer="done")
    completions = Completions(control, ledger)  # type: ignore[arg-type]
    assert completions.accepted() == {"b"}, "a job the queue completed counts as drained"
    completions.finish()
    assert answers(ledger) == [("b", "done"), ("a", "unknown")]
    ledger.close()


def test_an_answer_outside_the_four_is_the_targets_error(tmp_path: Path) -> None:
    ledger = ledger_with_acks(tmp_path)
    completions = Completions(AnsweringControl({("a", "t1")}, answer="yes"), ledger)  # type: ignore[arg-type]
    with pytest.raises(TargetCodeError, match=r"completion\('a', 't1'\) with 'yes'; expected one of accepted"):
        completions.accepted()
    ledger.close()
