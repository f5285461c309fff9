"""A partition counts only when the ledger shows the worker's traffic was cut while it lasted (issue 11)."""

from __future__ import annotations

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import FaultReport
from tests.history import History
from tests.unit.test_checker_anomalies import LEASE


def partition_report(h: History) -> FaultReport:
    (report,) = judge(h.snapshot(a="done").events).faults
    return report


def test_connections_the_proxy_closed_prove_a_partition() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").partition("w1", cut=2).heal("w1")
    h.execute("a", "w1")
    report = partition_report(h)
    assert report.exercised and "2 connection(s) closed" in report.why


def test_a_failed_extension_proves_a_partition_on_a_server_that_reports_nothing() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").partition("w1").heartbeat("a", "w1", ok=False).heal("w1")
    h.abandon("a", "w1").execute("a", "w2")
    report = partition_report(h)
    assert report.exercised and "1 lease extension(s) failed" in report.why


def test_a_partition_the_worker_extended_through_proves_nothing() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").partition("w1").heartbeat("a", "w1", ok=True).heal("w1")
    h.effect("a", "w1").ack("a", "w1")
    verdict = judge(h.snapshot(a="done").events)
    (report,) = verdict.faults
    assert not report.exercised and "1 succeeded" in report.why
    assert verdict.verdict == "inconclusive"


def test_a_cut_after_the_partition_healed_does_not_count() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").partition("w1").heartbeat("a", "w1").heal("w1")
    h.record(events.network_cut("w1", 1))
    h.effect("a", "w1").ack("a", "w1")
    assert not partition_report(h).exercised


def test_a_reclaim_from_a_partitioned_owner_is_a_recovery_not_a_premature_reclaim() -> None:
    h = History(LEASE).enqueue("a").claim("a", "w1").partition("w1", cut=1)
    h.claim("a", "w2", dt=1.1).heal("w1").effect("a", "w2").ack("a", "w2").abandon("a", "w1", reason="lost")
    verdict = judge(h.snapshot(a="done").events)
    assert verdict.verdict == "pass", verdict.violations
    assert verdict.recovery["jobs"] == {"a": [1.1]}
