"""Every violation kind carries a minimal proof built by the rule that fired: 2-4 premises, each tied to
the event it relied on (in the witness, at the witness's time) or derived (seq None, time set), and a
conclusion. One ledger per kind fires it; the premises must cite exactly the events the rule used."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from chaos import events
from chaos.check import labels
from chaos.check.checker import judge
from chaos.check.scan import scan
from chaos.check.verdict import Violation
from chaos.check.violation_kinds import VIOLATION_KINDS
from chaos.contract import Contract
from chaos.events import Event
from tests.history import AT_LEAST_ONCE, History
from tests.unit.test_checker_anomalies import LEASE

pytestmark = pytest.mark.unit

DERIVED = None  # a premise no single event shows
REDELIVER = replace(AT_LEAST_ONCE, max_attempts=3)
FAIL = replace(REDELIVER, on_owner_loss="fail")


@dataclass(frozen=True)
class Case:
    """A ledger that fires `kind`, the events its premises must cite ((kind, worker) of each, or DERIVED),
    and words its conclusion must hold."""

    ledger: Callable[[], History]
    cites: list[tuple[str, str | None] | None]
    concludes: str


def _stale_owner(ack_ok: bool, late_effect: bool = False, contract: Contract = LEASE) -> History:
    h = History(contract).enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1")
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1", dt=0.2)
    if late_effect:
        h.effect("a", "w1", "t1", dt=0.1)
    return h.ack("a", "w1", "t1", ok=ack_ok).snapshot(a="done")


def _stale_extension() -> History:
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1").stop("w1").claim("a", "w2", "t2", dt=1.2)
    h.heal("w1", dt=0.1).heartbeat("a", "w1", "t1", dt=0.25).heartbeat("a", "w1", "t1", dt=0.25)
    return h.abandon("a", "w1", "t1", reason="lost").effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done")


def _work_after_loss() -> History:
    h = History(replace(LEASE, watchdog=True)).enqueue("a").claim("a", "w1")
    h.heartbeat("a", "w1", ok=True, dt=0.25).heartbeat("a", "w1", ok=False, dt=0.25)
    return h.effect("a", "w1", dt=0.3).ack("a", "w1").snapshot(a="done")


def _premature() -> History:
    h = History(LEASE).enqueue("a").start("w1", 11).start("w2", 12).claim("a", "w1", "t1", pid=11)
    h.heartbeat("a", "w1", "t1").claim("a", "w2", "t2", pid=12, dt=1.5)
    return h.effect("a", "w2", "t2").ack("a", "w2", "t2").abandon("a", "w1", "t1").snapshot(a="done")


def _early() -> History:
    h = History(LEASE).enqueue("a").claim("a", "w1").heartbeat("a", "w1", dt=0.5).kill("w1")
    return h.execute("a", "w2", dt=0.37).snapshot(a="done")


def _gap() -> History:
    h = History(LEASE).enqueue("a").claim("a", "w1").heartbeat("a", "w1", dt=0.25)
    h.heartbeat("a", "w1", dt=2.0).heartbeat("a", "w1", dt=0.25)
    return h.effect("a", "w1").ack("a", "w1").snapshot(a="done")


def _record_stale() -> History:
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(events.QUEUE_CLAIM, "j1", "w1", 1, "t1").effect("j1", "w1", "t1")
    h.claim("j1", "w2", "t2", dt=1.5).queue(events.QUEUE_CLAIM, "j1", "w2", 2, "t2").effect("j1", "w2", "t2")
    h.ack("j1", "w2", "t2").queue(events.QUEUE_COMPLETE, "j1", "w2", 3, "t2")
    return h.ack("j1", "w1", "t1", ok=False).queue(events.QUEUE_COMPLETE, "j1", "w1", 4, "t1").snapshot(j1="done")


CASES: dict[str, Case] = {
    "lost": Case(lambda: History(REDELIVER).enqueue("a", fail=False).claim("a", "w1").kill("w1").snapshot(a="absent"),
                 [(events.ENQUEUE, None), (events.FAULT_APPLIED, "w1"), (events.SNAPSHOT, None)], "never took effect"),
    "stuck": Case(lambda: History(FAIL).enqueue("a").claim("a", "w1").kill("w1").snapshot(a="pending"),
                  [(events.PROBE_CLAIM, "w1"), (events.FAULT_APPLIED, "w1"), DERIVED, (events.SNAPSHOT, None)],
                  "past its recovery bound"),
    "unexpected": Case(lambda: History().enqueue("a").execute("a", "w1").execute("zz", "w1").snapshot(a="done"),
                       [(events.PROBE_EFFECT, "w1"), DERIVED], "never enqueued"),
    "redelivered": Case(lambda: History(replace(AT_LEAST_ONCE, delivery="exactly-once-effect")).enqueue("a")
                        .claim("a", "w1").effect("a", "w1").kill("w1").execute("a", "w2", dt=0.3).snapshot(a="done"),
                        [(events.PROBE_EFFECT, "w1"), (events.PROBE_CLAIM, "w2"), (events.PROBE_EFFECT, "w2")],
                        "took effect 2 times"),
    "overlapped": Case(lambda: _stale_owner(False, late_effect=True, contract=AT_LEAST_ONCE),
                       [(events.PROBE_CLAIM, "w1"), (events.PROBE_CLAIM, "w2"), (events.PROBE_EFFECT, "w2"),
                        (events.PROBE_EFFECT, "w1")], "worked on the job at once"),
    "dead_lettered": Case(lambda: History(FAIL).enqueue("a", fail=False).claim("a", "w1").ack("a", "w1", ok=False)
                          .snapshot(a="dead"),
                          [(events.ENQUEUE, None), (events.PROBE_CLAIM, "w1"), (events.SNAPSHOT, None)],
                          "max_attempts = 3"),
    "redelivered_after_owner_loss": Case(
        lambda: History(FAIL).enqueue("a", fail=False).claim("a", "w1").kill("w1").execute("a", "w2", dt=0.3)
        .snapshot(a="done"),
        [(events.PROBE_CLAIM, "w1"), (events.FAULT_APPLIED, "w1"), (events.PROBE_CLAIM, "w2")],
        "on_owner_loss = fail"),
    "stale_ack_accepted": Case(lambda: _stale_owner(True),
                               [(events.PROBE_CLAIM, "w2"), (events.PROBE_CLAIM, "w1"), (events.PROBE_ACK, "w1")],
                               "an ack from a claim it no longer held"),
    "stale_extension_accepted": Case(_stale_extension,
                                     [(events.PROBE_CLAIM, "w2"), (events.PROBE_HEARTBEAT, "w1"),
                                      (events.PROBE_HEARTBEAT, "w1")], "a lease it no longer granted"),
    "premature_reclaim": Case(_premature, [(events.PROBE_CLAIM, "w1"), (events.PROBE_CLAIM, "w2"), DERIVED],
                              "live, healthy owner"),
    "early_reclaim": Case(_early, [(events.PROBE_HEARTBEAT, "w1"), DERIVED, (events.PROBE_CLAIM, "w2")],
                          "before the owner's lease could have run out"),
    "heartbeat_gap": Case(_gap, [(events.PROBE_HEARTBEAT, "w1"), DERIVED, (events.PROBE_HEARTBEAT, "w1")],
                          "a lease that had already run out"),
    "work_after_known_loss": Case(_work_after_loss, [(events.PROBE_CLAIM, "w1"), (events.PROBE_HEARTBEAT, "w1"),
                                                     (events.PROBE_EFFECT, "w1")], "work it knew it had lost"),
    "effect_after_lease_loss": Case(lambda: _stale_owner(False, late_effect=True, contract=AT_LEAST_ONCE),
                                    [(events.PROBE_CLAIM, "w1"), (events.PROBE_CLAIM, "w2"),
                                     (events.PROBE_EFFECT, "w1")], "w1#1 acted on a job it no longer owned"),
    "recovery_bound_exceeded": Case(
        lambda: History(LEASE).enqueue("a").claim("a", "w1").stop("w1").execute("a", "w2", dt=3.0).heal("w1")
        .abandon("a", "w1").snapshot(a="done"),
        [(events.FAULT_APPLIED, "w1"), (events.PROBE_CLAIM, "w2"), DERIVED], "past the recovery bound"),
    "claim_after_completion": Case(
        lambda: History().enqueue("a").claim("a", "w1", "t1").effect("a", "w1", "t1").ack("a", "w1", "t1")
        .claim("a", "w2", "t2", dt=0.3).effect("a", "w2", "t2").ack("a", "w2", "t2").snapshot(a="done"),
        [(events.PROBE_ACK, "w1"), (events.PROBE_CLAIM, "w2")], "completed again"),
}


def _fired(kind: str) -> tuple[Violation, dict[int, Event]]:
    ledger = CASES[kind].ledger().events
    verdict = judge(ledger)
    found = [v for v in verdict.violations if v.kind == kind]
    assert len(found) == 1, (verdict.error, [(v.kind, v.message) for v in verdict.violations])
    return found[0], {e.seq: e for e in ledger}


def test_every_kind_has_a_ledger_that_proves_it() -> None:
    assert sorted(CASES) == sorted(VIOLATION_KINDS)


@pytest.mark.parametrize("kind", sorted(VIOLATION_KINDS))
def test_each_kinds_proof_cites_the_events_its_rule_used(kind: str) -> None:
    violation, by_seq = _fired(kind)
    case = CASES[kind]
    assert 2 <= len(violation.proof) <= 4, violation.proof
    cited = [None if p.seq is None else (by_seq[p.seq].kind, by_seq[p.seq].worker) for p in violation.proof]
    assert cited == case.cites, [p.says for p in violation.proof]
    assert not violation.conclusion.startswith("so ") and case.concludes in violation.conclusion, violation.conclusion
    witness = {entry["seq"]: entry for entry in violation.witness}
    for premise in violation.proof:
        assert premise.t is not None and f"+{premise.t:.3f} s" in premise.says or premise.seq is None, premise
        if premise.seq is not None:
            assert premise.seq in witness, (premise, sorted(witness))
            assert witness[premise.seq]["t"] == premise.t
        assert "token" not in premise.says and "{at}" not in premise.says, premise.says


def test_the_stale_ack_proof_reads_as_the_issue_asks() -> None:
    violation, _ = _fired("stale_ack_accepted")
    assert [p.says for p in violation.proof] == [
        "w2#1 claimed a at +1.250 s", "w1#1 had claimed it at +0.020 s and not released it",
        "the queue accepted w1#1's ack at +1.480 s"]
    assert violation.conclusion == "the queue accepted an ack from a claim it no longer held"


def test_a_lease_end_is_a_derived_premise_at_the_last_extension_plus_the_lease() -> None:
    violation, by_seq = _fired("early_reclaim")
    extension, lease_end, claim = violation.proof
    assert extension.seq is not None and by_seq[extension.seq].kind == events.PROBE_HEARTBEAT
    assert lease_end.seq is None and lease_end.t == pytest.approx((extension.t or 0.0) + 1.0)
    assert "lease_s = 1.0 s" in lease_end.says and "w2#1 claimed it" in claim.says


def test_the_queues_record_proves_a_stale_completion_by_its_own_entries() -> None:
    ledger = _record_stale().events
    verdict = judge(ledger)
    (violation,) = [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
    by_seq = {e.seq: e for e in ledger}
    assert [(by_seq[p.seq].kind, by_seq[p.seq].worker) for p in violation.proof if p.seq is not None] == [
        (events.QUEUE_CLAIM, "w1"), (events.QUEUE_CLAIM, "w2"), (events.QUEUE_COMPLETE, "w1")]
    assert "by w1#1" in violation.proof[-1].says and "w2#1 claimed it" in violation.proof[1].says
    assert "w1#1" in violation.message and "t1" not in violation.message
    assert {p.seq for p in violation.proof} <= {e["seq"] for e in violation.witness}
    labelled = {e["seq"]: e.get("label") for e in violation.witness}
    assert [labelled[p.seq] for p in violation.proof] == ["w1#1", "w2#1", "w1#1"]


def test_a_witness_says_each_executions_label_and_the_message_no_token() -> None:
    violation, _ = _fired("stale_ack_accepted")
    probes = [e for e in violation.witness if e["kind"].startswith(events.PROBE_PREFIX)]
    assert {(e["worker"], e["data"]["token"], e["label"]) for e in probes} == {("w1", "t1", "w1#1"),
                                                                               ("w2", "t2", "w2#1")}
    assert not any("label" in e for e in violation.witness if e["kind"] == events.FAULT)
    assert "t1" not in violation.message and violation.detail["token"] == "t1"


def test_the_checkers_labels_are_the_ledgers_with_claims_reordered_and_in_flight() -> None:
    # w1's claim of b is reported while a stop holds w1 (in flight: judged before w2's claim of b, reported
    # earlier), a claim reported twice keeps its label, and the queue's record places w3's claim first
    h = History(LEASE).enqueue("a", "b", "c").claim("a", "w1", "t1").claim("b", "w2", "t2")
    h.stop("w1").claim("b", "w1", "t3").heal("w1").claim("a", "w1", "t1").claim("c", "w2", "t4")
    h.queue(events.QUEUE_CLAIM, "c", "w3", 1, "t5").claim("c", "w3", "t5").claim("b", "w2", "t6")
    run = scan(h.snapshot(a="done", b="done", c="done").events)
    by_ledger = labels.of_ledger(h.events)
    executions = [e for job in run.jobs.values() for e in job.executions]
    assert executions and all(e.label == by_ledger.of(e.job, e.worker, e.token) for e in executions)
    assert sorted({e.label for e in executions if e.label}) == ["w1#1", "w1#2", "w2#1", "w2#2", "w2#3", "w3#1"]


def test_a_rerun_the_queues_record_shows_is_proved_by_its_completion_and_claim_entries() -> None:
    h = History().enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1, "t1").claim("a", "w1", "t1")
    h.effect("a", "w1", "t1").ack("a", "w1", "t1", ok=None).queue(events.QUEUE_COMPLETE, "a", "w1", 2, "t1")
    h.queue(events.QUEUE_CLAIM, "a", "w2", 3, "t2").claim("a", "w2", "t2").effect("a", "w2", "t2")
    h.ack("a", "w2", "t2", ok=None).queue(events.QUEUE_COMPLETE, "a", "w2", 4, "t2")
    ledger = h.snapshot(a="done").events
    (violation,) = [v for v in judge(ledger).violations if v.kind == "claim_after_completion"]
    by_seq = {e.seq: e for e in ledger}
    assert [(by_seq[p.seq].kind, by_seq[p.seq].worker) for p in violation.proof if p.seq is not None] == [
        (events.QUEUE_COMPLETE, "w1"), (events.QUEUE_CLAIM, "w2")]
    assert "completed by w1#1 (order 2)" in violation.proof[0].says
    assert "a claim of it by w2#1 after that (order 3)" in violation.proof[1].says
    assert "by w2#1" in violation.message and {p.seq for p in violation.proof} <= {e["seq"] for e in violation.witness}


def test_a_proof_from_an_earlier_cause_starts_where_the_witness_does() -> None:
    # the queue's record released w1's job before a partition cut w1 off; w2 claimed it 3 s later
    h = History(LEASE).enqueue("a").queue(events.QUEUE_CLAIM, "a", "w1", 1).claim("a", "w1", "t1")
    h.queue(events.QUEUE_RELEASE, "a", "w1", 2, dt=0.2).partition("w1").claim("a", "w2", "t2", dt=3.0)
    h.queue(events.QUEUE_CLAIM, "a", "w2", 3).effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1")
    ledger = h.snapshot(a="done").events
    (violation,) = [v for v in judge(ledger).violations if v.kind == "recovery_bound_exceeded"]
    cause, claim, free = violation.proof
    assert violation.witness[0]["seq"] == cause.seq and "the queue's own record took it" in cause.says
    assert claim.says.startswith("w2#1 claimed it at +") and free.seq is None
    witness = {e["seq"]: e["t"] for e in violation.witness}
    assert all(witness[p.seq] == p.t for p in violation.proof if p.seq is not None)


def test_the_witness_keeps_a_premises_event_past_its_length_limit() -> None:
    # w1's claim is more than WITNESS_LIMIT events before the stale ack: the witness holds it all the same
    h = History(LEASE).enqueue("a").claim("a", "w1", "t1")
    for _ in range(250):
        h.heartbeat("a", "w1", "t1", dt=0.1)
    h.stop("w1").claim("a", "w2", "t2", dt=1.2).effect("a", "w2", "t2").ack("a", "w2", "t2").heal("w1")
    ledger = h.ack("a", "w1", "t1").snapshot(a="done").events
    (violation,) = [v for v in judge(ledger).violations if v.kind == "stale_ack_accepted"]
    first_claim = next(e.seq for e in ledger if e.kind == events.PROBE_CLAIM)
    assert violation.proof[1].seq == first_claim
    seqs = [e["seq"] for e in violation.witness]
    assert first_claim in seqs and seqs == sorted(seqs) and len(seqs) == 201


def test_a_job_the_final_snapshot_does_not_list_is_proved_gone_by_that_snapshot() -> None:
    """A snapshot lists only the jobs the queue still has (redis_basic's does): the lost job's last premise
    cites the snapshot that left it out."""
    history = History(REDELIVER).enqueue("a", fail=False).claim("a", "w1").kill("w1").snapshot()
    (taken,) = [e for e in history.events if e.kind == events.SNAPSHOT_TAKEN]
    (violation,) = [v for v in judge(history.events).violations if v.kind == "lost"]
    last = violation.proof[-1]
    assert last.seq == taken.seq and "does not list it, and no effect of it was reported" in last.says
