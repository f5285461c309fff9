"""The checker on hand-written ledgers: one known answer per outcome and per verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.check.checker import judge
from tests.history import AT_LEAST_ONCE, History


def test_completed_job_passes() -> None:
    verdict = judge(History().enqueue("a").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass"
    assert verdict.jobs == {"a": "completed"}
    assert verdict.counts["completed"] == 1 and verdict.counts["enqueued"] == 1


def test_redelivery_after_kill_passes_at_least_once_with_recovery_time() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1", token="t1").add("probe.effect", "a", "w1", token="t1", accepted=True)
    h.add("gate.matched", "a", "w1", gate="g1").kill("w1", gate="g1")
    h.add("probe.claim", "a", "w2", dt=0.8, token="t2").add("probe.effect", "a", "w2", accepted=True)
    h.add("probe.ack", "a", "w2", ok=True).snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "pass", verdict
    assert verdict.jobs == {"a": "redelivered"}
    assert verdict.faults[0].exercised
    assert verdict.recovery["max_s"] == pytest.approx(0.81)  # fault.applied -> exit -> reclaim


def test_redelivery_is_a_violation_under_exactly_once_effect() -> None:
    contract = replace(AT_LEAST_ONCE, delivery="exactly-once-effect")
    # w1 dies after its effect (a redelivery, not an overlap: its execution ended before w2 claimed)
    h = History(contract).enqueue("a").execute("a", "w1", ack=False).kill("w1").execute("a", "w2").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "fail"
    assert [(v.kind, v.job) for v in verdict.violations] == [("redelivered", "a")]


def test_lost_job_fails_with_witness() -> None:
    h = History().enqueue("a", "b").execute("a", "w1").snapshot(a="done", b="done")
    verdict = judge(h.events)
    assert verdict.verdict == "fail"
    assert verdict.jobs["b"] == "lost"
    (violation,) = verdict.violations
    assert violation.kind == "lost" and violation.job == "b"
    assert [e["kind"] for e in violation.witness] == ["enqueue", "snapshot"]


def test_absent_job_with_no_effect_is_lost() -> None:
    verdict = judge(History().enqueue("a").snapshot().events)
    assert verdict.jobs == {"a": "lost"}


def test_stuck_job_witness_shows_the_fault_between_effect_and_snapshot() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1", token="t1").add("probe.effect", "a", "w1", accepted=True)
    h.add("gate.matched", "a", "w1", gate="g1").kill("w1", gate="g1").add("gate.released", "a", gate="g1")
    h.snapshot(a="claimed")
    verdict = judge(h.events)
    assert verdict.verdict == "fail"
    (violation,) = verdict.violations
    assert violation.kind == "stuck" and violation.job == "a"
    kinds = [e["kind"] for e in violation.witness]
    assert kinds.index("probe.effect") < kinds.index("fault") < kinds.index("process.exit") < kinds.index("snapshot")
    assert "still claimed" in violation.message


def test_effect_for_a_job_never_enqueued_is_unexpected() -> None:
    h = History().enqueue("a").execute("a", "w1").execute("zz", "w1").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "fail"
    assert verdict.jobs["zz"] == "unexpected"
    assert [v.kind for v in verdict.violations] == ["unexpected"]


def test_dead_lettered_job_is_not_a_violation() -> None:
    h = History().enqueue("a").add("probe.claim", "a", "w1").add("probe.ack", "a", "w1", ok=False).snapshot(a="dead")
    verdict = judge(h.events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "dead_lettered"}


def test_gate_that_never_matched_is_inconclusive_never_pass() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    verdict = judge(h.execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "inconclusive"
    assert verdict.exit_code == 4


def test_kill_without_a_reaped_sigkill_exit_is_not_exercised() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1").add("probe.effect", "a", "w1").add("gate.matched", "a", "w1", gate="g1")
    h.kill("w1", gate="g1", exited=False).execute("a", "w2").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "inconclusive"
    assert not verdict.faults[0].exercised and "SIGKILL" in verdict.faults[0].why


def test_fault_applied_before_its_gate_matched_is_not_exercised() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect").kill("w1", gate="g1")
    h.add("probe.claim", "a", "w1").add("probe.effect", "a", "w1").add("gate.matched", "a", "w1", gate="g1")
    verdict = judge(h.add("probe.ack", "a", "w1", ok=True).snapshot(a="done").events)
    assert verdict.verdict == "inconclusive"
    assert "had not matched" in verdict.faults[0].why


def test_missing_final_snapshot_is_inconclusive() -> None:
    verdict = judge(History().enqueue("a").execute("a", "w1").events)
    assert verdict.verdict == "inconclusive"
    assert verdict.jobs == {"a": "unknown"}


def test_checker_crash_is_an_error_verdict_with_traceback() -> None:
    h = History().enqueue("a").add("fault", None, "w1", kind="kill")  # no fault id: malformed ledger
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "error" and verdict.exit_code == 3
    assert verdict.error is not None and "KeyError" in verdict.error


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["once", "twice", "lost", "stuck"]), min_size=1, max_size=20))
def test_counts_partition_the_jobs_and_only_clean_histories_pass(plan: list[str]) -> None:
    h = History().start("idle", 4343)  # a worker free to take any job the others leave unfinished
    jobs = [f"j{i}" for i in range(len(plan))]
    h.enqueue(*jobs)
    states = {}
    for job, fate in zip(jobs, plan, strict=True):
        if fate in ("once", "twice"):
            h.execute(job, "w1", ack=fate == "once")
        if fate == "twice":  # w1 dies before its ack, then w2 redelivers (claiming from a live w1 would be premature)
            h.kill("w1", fid=f"kill-{job}").execute(job, "w2")
        if fate == "stuck":
            h.execute(job, "w1", ack=False)
        states[job] = "claimed" if fate == "stuck" else "done"
    verdict = judge(h.snapshot(**states).events)
    outcomes = ("completed", "redelivered", "lost", "stuck")
    assert sum(verdict.counts[o] for o in outcomes) == len(jobs)
    assert verdict.counts["lost"] == plan.count("lost") and verdict.counts["stuck"] == plan.count("stuck")
    assert (verdict.verdict == "pass") == ("lost" not in plan and "stuck" not in plan)


def test_kill_whose_exit_is_reaped_before_the_applied_record_is_exercised() -> None:
    # The reaper thread may journal the exit between the nemesis's `fault` and `fault.applied` entries.
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1").add("probe.effect", "a", "w1").add("gate.matched", "a", "w1", gate="g1")
    h.add("fault", None, "w1", id="f1", kind="kill", target="w1", gate="g1")
    h.add("process.exit", None, "w1", pid=4242, returncode=-9, signal="SIGKILL")
    h.add("fault.applied", None, "w1", id="f1", pids=[4242]).execute("a", "w2").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.faults[0].exercised, verdict.faults[0].why
    assert verdict.verdict == "pass"


def test_sigkill_exit_of_a_process_the_fault_never_signalled_is_no_proof() -> None:
    h = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1").add("probe.effect", "a", "w1").add("gate.matched", "a", "w1", gate="g1")
    h.add("fault", None, "w1", id="f1", kind="kill", target="w1", gate="g1")
    h.add("fault.applied", None, "w1", id="f1", pids=[4242])
    h.add("process.exit", None, "w1", pid=9999, returncode=-9, signal="SIGKILL")
    verdict = judge(h.execute("a", "w2").snapshot(a="done").events)
    assert not verdict.faults[0].exercised


def test_reclaim_reported_before_the_killed_owners_exit_is_a_redelivery_not_an_overlap() -> None:
    # A row lock is freed within milliseconds of the kill: the next owner's claim and effect can reach
    # the ledger before the killed process's exit is reaped (seen on pg_txlock).
    contract = replace(AT_LEAST_ONCE, overlap="never")
    h = History(contract).enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    h.add("probe.claim", "a", "w1", token="t1").add("probe.effect", "a", "w1", token="t1", accepted=True)
    h.add("gate.matched", "a", "w1", gate="g1").add("fault", None, "w1", id="f1", kind="kill", target="w1", gate="g1")
    h.add("probe.claim", "a", "w2", token="t2").add("probe.effect", "a", "w2", token="t2", accepted=True)
    h.add("process.exit", None, "w1", pid=4242, returncode=-9, signal="SIGKILL")
    h.add("probe.ack", "a", "w2", token="t2", ok=True).add("fault.applied", None, "w1", id="f1", pids=[4242])
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.jobs == {"a": "redelivered"}


def test_a_fault_kind_without_a_registered_proof_is_not_exercised_never_pass() -> None:
    h = History().enqueue("a").journal("sever", "w1").applied("w1", pids=[4242])
    verdict = judge(h.execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "inconclusive"
    (fault,) = verdict.faults
    assert not fault.exercised and "no registered proof" in fault.why


def test_a_job_retried_forever_says_how_many_times_it_was_claimed() -> None:
    h = History().enqueue("a")
    for attempt in range(5):
        h.claim("a", "w1", f"t{attempt}").abandon("a", "w1", f"t{attempt}", reason="handler failed")
    verdict = judge(h.claim("a", "w2", "t5").snapshot_with(a={"state": "claimed", "owner": "w2"}).events)
    (violation,) = verdict.violations
    assert violation.kind == "stuck" and "after 6 claim(s) and 0 effect(s)" in violation.message


def test_an_inconclusive_run_names_the_gate_that_never_matched_and_its_spec() -> None:
    h = History().enqueue("a").armed("g1", "after:effect job=zz", "zz").execute("a", "w1").snapshot(a="done")
    verdict = judge(h.events)
    assert verdict.verdict == "inconclusive"
    assert "gate g1 (after:effect job=zz) never matched" in verdict.notes


def test_a_job_whose_owner_was_lost_too_recently_is_not_called_stuck() -> None:
    h = History().enqueue("a").claim("a", "w1").effect("a", "w1").kill("w1")
    verdict = judge(h.snapshot_with(dt=0.008, a={"state": "claimed", "owner": "w1"}).events)
    assert verdict.verdict == "inconclusive" and verdict.jobs == {"a": "unsettled"} and not verdict.violations
    (note,) = [n for n in verdict.notes if n.startswith("a was still claimed")]
    assert "before its recovery bound of 2.0s" in note and "fault f1 took its owner w1" in note


def test_near_miss_past_the_recovery_bound_the_same_job_is_stuck() -> None:
    h = History().enqueue("a").claim("a", "w1").effect("a", "w1").kill("w1")
    verdict = judge(h.snapshot_with(dt=2.01, a={"state": "claimed", "owner": "w1"}).events)
    assert verdict.verdict == "fail" and [v.kind for v in verdict.violations] == ["stuck"]
