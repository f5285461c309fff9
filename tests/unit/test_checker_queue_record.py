"""Judging from the queue's own record: a completion the queue accepted from a worker that no longer owned
the job (by the queue's order) is stale_ack_accepted whatever the worker said; the order is the queue's,
not the ledger's; the two sources' disagreements are reported; without a record, the probes judge."""

from __future__ import annotations

from chaos import events
from chaos.check.checker import check
from chaos.contract import Contract
from tests.history import History

LEASE = Contract(recovery_bound_s=2.0, lease_s=1.0, stale_ack="rejected", overlap="after-lease-loss")
CLAIM, COMPLETE, RELEASE = events.QUEUE_CLAIM, events.QUEUE_COMPLETE, events.QUEUE_RELEASE


def stale_run(w1_says: bool | None) -> History:
    """w1 claims, w2 reclaims after w1's lease, both complete; w1 reports its ack as `w1_says`."""
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(CLAIM, "j1", "w1", 1, "t1").effect("j1", "w1", "t1")
    h.claim("j1", "w2", "t2", dt=1.5).queue(CLAIM, "j1", "w2", 2, "t2").effect("j1", "w2", "t2")
    h.ack("j1", "w2", "t2").queue(COMPLETE, "j1", "w2", 3, "t2")
    h.ack("j1", "w1", "t1", ok=w1_says).queue(COMPLETE, "j1", "w1", 4, "t2")
    return h.snapshot(j1="done")


def test_a_stale_completion_the_queue_accepted_fails_whatever_the_worker_said() -> None:
    """Reported accepted, the probes prove it (one violation, theirs); reported refused or unknown, only the
    record shows it, and it fails all the same."""
    for said in (True, False, None):
        verdict = check(stale_run(said).events)
        assert verdict.evidence == {"claims": "queue", "completions": "queue", "acks": "queue, worker"}
        stale = [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
        assert len(stale) == 1, (said, verdict.violations)
        if said is not True:
            assert "queue's own record" in stale[0].message
            assert stale[0].detail == {"source": "queue", "worker": "w1", "owner": "w2"}
        disagree = [a for a in verdict.anomalies
                    if a["kind"] == "sources_disagree" and "never reported" in a["message"]]
        assert bool(disagree) == (said is False), "refused by the worker, accepted by the queue: reported"


def test_near_miss_the_owners_own_completion_and_a_repeat_by_it_are_fine() -> None:
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(CLAIM, "j1", "w1", 1, "t1").effect("j1", "w1", "t1")
    h.ack("j1", "w1", "t1").queue(COMPLETE, "j1", "w1", 2, "t1").queue(COMPLETE, "j1", "w1", 3, "t1")
    verdict = check(h.snapshot(j1="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.anomalies == []


def test_the_queues_order_not_the_ledgers_decides_who_owned_the_job() -> None:
    """The observer journals a moment late: w2's claim is in the ledger after w1's completion, but the
    queue committed w1's completion first (order 2), so it was w1's own."""
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").effect("j1", "w1", "t1").ack("j1", "w1", "t1")
    h.queue(CLAIM, "j1", "w1", 1, "t1").queue(CLAIM, "j1", "w2", 3, "t2").queue(COMPLETE, "j1", "w1", 2, "t1")
    h.claim("j1", "w2", "t2", dt=1.5)
    verdict = check(h.snapshot(j1="done").events)
    assert not [v for v in verdict.violations if v.kind == "stale_ack_accepted"], verdict.violations


def test_a_completion_after_the_queue_released_the_job_is_stale() -> None:
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(CLAIM, "j1", "w1", 1, "t1").queue(RELEASE, "j1", None, 2, "t1")
    h.ack("j1", "w1", "t1").queue(COMPLETE, "j1", "w1", 3, "t1")
    verdict = check(h.snapshot(j1="done").events)
    stale = [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
    assert stale and "after the queue had taken it back" in stale[0].message


def test_stale_ack_accepted_by_contract_is_an_anomaly_from_the_record() -> None:
    contract = Contract(recovery_bound_s=2.0, lease_s=1.0, stale_ack="accepted", overlap="after-lease-loss")
    h = stale_run(False)
    h.events[0] = h.events[0]._replace(data=dict(h.events[0].data, contract=contract.to_dict()))
    verdict = check(h.events)
    assert not [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
    assert [a for a in verdict.anomalies if a["kind"] == "stale_ack_accepted" and a["source"] == "queue"]


def test_a_reported_claim_the_queue_never_made_and_an_unrecorded_accepted_ack_disagree() -> None:
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").effect("j1", "w1", "t1").ack("j1", "w1", "t1").queue(CLAIM, "j1", "w9", 1, "t0")
    verdict = check(h.snapshot(j1="done").events)
    messages = [a["message"] for a in verdict.anomalies if a["kind"] == "sources_disagree"]
    assert any("reported a claim" in m for m in messages) and any("shows no completion by w1" in m for m in messages)


def test_without_a_record_the_probes_judge() -> None:
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").effect("j1", "w1", "t1").ack("j1", "w1", "t1")
    verdict = check(h.snapshot(j1="done").events)
    assert verdict.evidence == {"claims": "probes", "completions": "probes", "acks": "worker"}
    assert verdict.verdict == "pass"


def test_a_record_of_claims_alone_judges_no_completion_and_the_probes_keep_theirs() -> None:
    """A broker that shows deliveries but not acks: the probes' stale ack stands, the record's claims are
    compared with the probes' claims, and nothing is read into completions it cannot see."""
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(CLAIM, "j1", "w1", 1, "t1", covers=("claim",)).effect("j1", "w1", "t1")
    h.claim("j1", "w2", "t2", dt=1.5).queue(CLAIM, "j1", "w2", 2, "t2").effect("j1", "w2", "t2")
    h.ack("j1", "w2", "t2").ack("j1", "w1", "t1").claim("j1", "w3", "t3")
    verdict = check(h.snapshot(j1="done").events)
    assert verdict.evidence == {"claims": "queue", "completions": "probes", "acks": "worker"}
    stale = [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
    assert stale and "queue's own record" not in stale[0].message, "the probes judged it"
    messages = [a["message"] for a in verdict.anomalies if a["kind"] == "sources_disagree"]
    assert messages == ["w3#1 reported a claim of j1 that the queue's record does not show"], messages


def test_the_records_library_worker_ids_are_read_as_the_suites_workers() -> None:
    """The queue names its workers its own way (celery@host-1); each worker's claim probe said which one it
    is, so the record's stale completion names w1 and w2, and the sources agree on everything else."""
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1", library_id="celery@host-1").queue(CLAIM, "j1", "celery@host-1", 1, "t1")
    h.effect("j1", "w1", "t1")
    h.claim("j1", "w2", "t2", dt=1.5, library_id="celery@host-2").queue(CLAIM, "j1", "celery@host-2", 2, "t2")
    h.effect("j1", "w2", "t2").ack("j1", "w2", "t2").queue(COMPLETE, "j1", "celery@host-2", 3, "t2")
    h.ack("j1", "w1", "t1", ok=None).queue(COMPLETE, "j1", "celery@host-1", 4, "t2")
    verdict = check(h.snapshot(j1="done").events)
    stale = [v for v in verdict.violations if v.kind == "stale_ack_accepted"]
    assert [v.detail for v in stale] == [{"source": "queue", "worker": "w1", "owner": "w2"}]
    assert not [a for a in verdict.anomalies if a["kind"] == "sources_disagree"], verdict.anomalies


def test_a_record_that_misses_a_stale_ack_the_probes_prove_never_cancels_it() -> None:
    """The queue's log lacks the stale owner's completion (a write it does not log, an unattributable one):
    the probes' proof stands, and the disagreement is reported."""
    h = History(LEASE).enqueue("j1")
    h.claim("j1", "w1", "t1").queue(CLAIM, "j1", "w1", 1, "t1").effect("j1", "w1", "t1")
    h.claim("j1", "w2", "t2", dt=1.5).queue(CLAIM, "j1", "w2", 2, "t2").effect("j1", "w2", "t2")
    h.ack("j1", "w2", "t2").queue(COMPLETE, "j1", "w2", 3, "t2")
    h.ack("j1", "w1", "t1").queue(COMPLETE, "j1", None, 4, "t2")
    verdict = check(h.snapshot(j1="done").events)
    assert verdict.verdict == "fail" and "stale_ack_accepted" in [v.kind for v in verdict.violations]
    assert any(a["kind"] == "sources_disagree" and "probes show a stale ack" in a["message"]
               for a in verdict.anomalies)


def batch_picked(recorded: bool) -> History:
    """w1 commits a batch's claim of j1 (the queue's record, token t1) and its handler reports the claim
    0.8 s later; w1 is killed, and w2 reclaims 1.3 s after the commit: past the 1 s lease, though only
    0.5 s after w1's report."""
    h = History(LEASE).enqueue("j1").start("w1").start("w2", pid=4343)
    if recorded:
        h.queue(CLAIM, "j1", "w1", 1, "t1")
    h.claim("j1", "w1", "t1", dt=0.8).kill("w1").claim("j1", "w2", "t2", dt=0.5)
    if recorded:
        h.queue(CLAIM, "j1", "w2", 2, "t2")
    h.effect("j1", "w2", "t2").ack("j1", "w2", "t2")
    if recorded:
        h.queue(COMPLETE, "j1", "w2", 3, "t2")
    return h.snapshot(j1="done")


def test_a_batch_pickers_late_claim_report_is_judged_at_the_queues_commit() -> None:
    """Read at its report's arrival, w1's claim makes w2's reclaim look early; the queue's record of the
    claim shows it was committed 1.3 s before, so the lease had run out (and the run passes)."""
    by_probes = check(batch_picked(recorded=False).events)
    assert [v.kind for v in by_probes.violations] == ["early_reclaim"], by_probes.violations
    by_record = check(batch_picked(recorded=True).events)
    assert by_record.verdict == "pass", by_record.violations
    assert by_record.anomalies == []


def reported_out_of_order(recorded: bool) -> History:
    """The queue commits w1's claim (order 1), w1 is stopped before it reports it, and after w1's lease
    w2 claims (order 2) and reports first; w1 resumes and reports its claim while w2 is still at work,
    its ack is refused, and w2 completes the job."""
    h = History(LEASE).enqueue("j1").start("w1").start("w2", pid=4343)
    if recorded:
        h.queue(CLAIM, "j1", "w1", 1, "t1")
    h.stop("w1").claim("j1", "w2", "t2", dt=1.2)
    if recorded:
        h.queue(CLAIM, "j1", "w2", 2, "t2")
    h.effect("j1", "w2", "t2").heal("w1").claim("j1", "w1", "t1").ack("j1", "w1", "t1", ok=False)
    h.ack("j1", "w2", "t2")
    if recorded:
        h.queue(COMPLETE, "j1", "w2", 3, "t2")
    return h.snapshot(j1="done")


def test_the_queues_order_of_claims_not_their_reports_says_who_took_the_job_from_whom() -> None:
    """A worker that does not stamp its probes (`sent`): by arrival, stopped w1 took the job from a healthy
    w2 (premature_reclaim); by the queue's record, w2 took it from w1 after w1's lease, as it should."""
    by_probes = check(reported_out_of_order(recorded=False).events)
    assert "premature_reclaim" in [v.kind for v in by_probes.violations], by_probes.violations
    by_record = check(reported_out_of_order(recorded=True).events)
    assert by_record.verdict == "pass", by_record.violations


def test_near_miss_a_record_without_tokens_leaves_the_reports_order_standing() -> None:
    """A record that does not name a claim's token cannot be matched to one report of several by the
    same worker, so it places nothing: the early reclaim stays."""
    h = History(LEASE).enqueue("j1").start("w1").start("w2", pid=4343).queue(CLAIM, "j1", "w1", 1)
    h.claim("j1", "w1", "t1", dt=0.8).kill("w1").claim("j1", "w2", "t2", dt=0.5).queue(CLAIM, "j1", "w2", 2)
    h.effect("j1", "w2", "t2").ack("j1", "w2", "t2").queue(COMPLETE, "j1", "w2", 3)
    verdict = check(h.snapshot(j1="done").events)
    assert "early_reclaim" in [v.kind for v in verdict.violations], verdict.violations
