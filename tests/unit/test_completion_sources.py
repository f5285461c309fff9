"""Each piece of completion evidence names its source, and an ack is called accepted only on a source that
decides it (issue 34, item 6): a result store records that a task ran to completion, whoever's ack the
broker took, so a stale owner's result there is a completion and no accepted ack; the broker's answer to
the ack, or the queue's record, decides it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.errors import TargetCodeError
from chaos.ledger import Ledger
from chaos.reports import proof
from chaos.runtime import probe_schema
from chaos.runtime.completions import Completions
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE


def stale_owner_resumes() -> History:
    """w1 is stopped past its lease, w2 takes the job over, effects it and acks it; w1 resumes and acks."""
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    return h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1", dt=0.2)


def stale_kinds(h: History) -> list[str]:
    verdict = judge(h.events)
    return [v.kind for v in verdict.violations] + [a["kind"] for a in verdict.anomalies]


def test_a_result_store_completion_from_a_stale_owner_is_no_accepted_ack() -> None:
    # near miss of the next test: the control's word comes from a result store, which stored w1's result
    # whether or not the broker refused its ack ("Couldn't ack ... ConnectionResetError")
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=None).answer("a", "w1", "t1", "accepted", "result-store")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", [v.message for v in verdict.violations]
    assert "stale_ack_accepted" not in stale_kinds(h)
    assert verdict.evidence["acks"] == "worker", "only w2's own report decided an ack"


def test_a_stale_owners_completion_the_queues_record_accepted_is_a_stale_ack_naming_that_source() -> None:
    # trigger: the same answer, read from the queue's record of whose ack completed the job
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=None).answer("a", "w1", "t1", "accepted", "queue")
    verdict = judge(h.snapshot(a="done").events)
    [violation] = verdict.violations
    assert violation.kind == "stale_ack_accepted"
    assert "the control's answer, from the queue's record of whose ack completed the job" in violation.message
    assert violation.detail["source"] == "queue" and violation.detail["answered_by"] == "control"
    assert verdict.evidence["acks"] == "queue, worker"


def test_a_stale_ack_the_broker_accepted_is_a_stale_ack_naming_the_broker() -> None:
    # trigger: the worker reports the broker's own answer to its ack (kombu's ack returned)
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=True, source="broker")
    verdict = judge(h.snapshot(a="done").events)
    [violation] = verdict.violations
    assert violation.kind == "stale_ack_accepted" and violation.detail["source"] == "broker"
    assert "(the evidence: the broker's answer to the ack, as the worker reported it)" in violation.message
    assert verdict.evidence["acks"] == "broker, worker"


def test_a_stale_ack_the_broker_refused_is_no_stale_ack() -> None:
    # near miss: kombu logged "Couldn't ack": the broker did not take it
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=False, source="broker")
    assert judge(h.snapshot(a="done").events).verdict == "pass"


def test_an_ack_probe_vouched_for_by_a_result_store_proves_the_completion_and_no_ack() -> None:
    # a worker that read a result store and sent ok true: the job completed, the ack is not judged by it
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=True, source="result-store")
    assert "stale_ack_accepted" not in stale_kinds(h.snapshot(a="done"))
    only = History(LEASE).enqueue("b").claim("b", "w1", "t1").effect("b", "w1", "t1")
    only.ack("b", "w1", "t1", ok=True, source="result-store")
    verdict = judge(only.snapshot().events)  # the snapshot leaves b out: only the result store proves it
    assert verdict.jobs["b"] == "completed" and verdict.evidence["acks"] == "none"


def test_an_allowed_stale_ack_names_its_source_in_the_anomaly() -> None:
    h = History(replace(LEASE, stale_ack="accepted")).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1", dt=0.2)
    verdict = judge(h.ack("a", "w1", "t1", ok=True, source="broker").snapshot(a="done").events)
    [anomaly] = [a for a in verdict.anomalies if a["kind"] == "stale_ack_accepted"]
    assert anomaly["source"] == "broker" and "the broker's answer" in anomaly["message"]


def test_a_control_answer_journaled_before_sources_reads_as_the_queues_record() -> None:
    # backward compatible: an old ledger's control.completion has no source
    h = stale_owner_resumes().ack("a", "w1", "t1", ok=None)
    h.record(events.Record(events.COMPLETION, events.CONTROLLER, "a", "w1", {"token": "t1", "outcome": "accepted"}))
    assert [v.kind for v in judge(h.snapshot(a="done").events).violations] == ["stale_ack_accepted"]


class SourcedControl:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def completion(self, job: str, token: str) -> object:
        return self.answer


def test_the_run_journals_the_source_a_control_names_and_the_queues_record_for_a_bare_answer(tmp_path: Path) -> None:
    for answer, source in ((("accepted", "result-store"), "result-store"), ("accepted", "queue")):
        ledger = Ledger(tmp_path / f"{source}.sqlite")
        ledger.append(events.probe(events.ACK, "a", "w1", {"token": "t1", "ok": None}))
        assert Completions(SourcedControl(answer), ledger).accepted() == {"a"}  # type: ignore[arg-type]
        [said] = [e.data for e in ledger.events() if e.kind == events.COMPLETION]
        assert said == {"token": "t1", "outcome": "accepted", "source": source}
        ledger.close()


def test_a_source_outside_the_vocabulary_is_the_targets_error(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.append(events.probe(events.ACK, "a", "w1", {"token": "t1", "ok": None}))
    with pytest.raises(TargetCodeError, match=r"\('accepted', 'backend'\); expected .* source one of worker, broker"):
        Completions(SourcedControl(("accepted", "backend")), ledger).accepted()  # type: ignore[arg-type]
    ledger.close()


def test_an_ack_probe_names_a_source_from_the_vocabulary_or_is_refused() -> None:
    assert probe_schema.parse("ack", b'{"job": "a", "ok": true, "source": "broker"}')["source"] == "broker"
    with pytest.raises(probe_schema.BadProbe, match='must be one of "worker", "broker", "queue", "result-store"'):
        probe_schema.parse("ack", b'{"job": "a", "ok": true, "source": "backend"}')


def test_a_witness_told_in_words_names_the_source_of_each_ack_and_answer() -> None:
    entries = [{"kind": events.PROBE_ACK, "worker": "w1", "t": 1.0, "data": {"ok": True, "source": "broker"}},
               {"kind": events.PROBE_ACK, "worker": "w2", "t": 2.0, "data": {"ok": True, "source": "result-store"}},
               {"kind": events.COMPLETION, "worker": "w2", "t": 3.0,
                "data": {"outcome": "accepted", "source": "result-store"}}]
    sentences = [text for _, text in proof.in_words(entries, "a", 0.0, {})]
    assert sentences == [
        "w1 acknowledged a at +1.000 s, and the queue accepted it (the evidence: the broker's answer to the ack, "
        "as the worker reported it).",
        "w2 acknowledged a at +2.000 s, and whether the queue took it is unknown (the evidence: a result store, "
        "which records that the task ran, not that its ack was taken).",
        "The control answered that w2's completion of a was accepted, at +3.000 s (read from a result store, which "
        "records that the task ran, not that its ack was taken).",
    ]
