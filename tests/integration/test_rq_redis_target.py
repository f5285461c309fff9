"""rq_redis runs RQ 2.12 itself (its `rq worker` CLI, the default forking Worker) with probes sent from the
job function and RQ's documented on_success / on_failure callbacks, which RQ runs in the work horse it
forks per job. Through the CLI: `chaos target check` finds every seam holding (the control vouching for
RQ's own completions from the job's status), and a kill cell of the adapter's known answers gives its
verdict: the claim came from the work horse, a child of the `rq worker` process the supervisor started
(same worker id, another pid), and the SIGKILL of the worker's tree reached both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos import events
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.suite.cell import Cell
from chaos.suite.spec import load_suite
from tests.integration.runner import chaos

pytest.importorskip("rq", reason="the rq extra is not installed: pip install -e .[rq]")

# The library adapters' tests run in the full tier, beside their known-answer cells (targets/libraries.toml):
# each starts a library's own worker, seconds apiece, and the README's test command stays within minutes.
pytestmark = pytest.mark.full
TARGET = "rq_redis"
SUITE = Path(__file__).resolve().parents[2] / "targets" / TARGET / "known_answers.toml"


def cell(scenario: str, *, fast: bool) -> Cell:
    """The adapter's one cell of `scenario`: the fast one holds RQ's default worker to a 5 s recovery
    (a -c override), the slow one runs the tightened monitoring variant."""
    (found,) = [c for c in load_suite(SUITE).cells
                if c.scenario == scenario and (("recovery_bound_s=5" in c.contract) == fast)]
    return found


def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "the final snapshot shows job-0001 done" in result.stdout
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "Worker w1." in log and "version 2.12.0" in log and "tasks.chaos_job('job-0001'" in log, log
    # RQ, not the job, completed it: the on_success callback's ack could not vouch for it, and the control
    # answered from the job's status in Redis that the completion took effect.
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    (ack,) = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == "job-0001"]  # the fault-free job
    (answer,) = [e for e in ledger if e.kind == events.COMPLETION and e.job == "job-0001"]
    assert ack.data["ok"] is None and answer.seq > ack.seq and answer.data["outcome"] == "accepted"


def check_kill_run(scenario: str, fast: bool, tmp_path: Path) -> dict[str, Any]:
    known = cell(scenario, fast=fast)
    result = chaos(*known.argv(1, tmp_path), timeout=240)
    assert result.code == known.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == known.verdict
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim came from RQ's work horse: a process of its own (RQ forks one per job), not the one the
    # supervisor started, but that process's child, which inherited its worker id; the kill of the worker's
    # tree signalled both.
    claim = next(e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job)
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    assert claim.worker == held.worker and "worker.py" in " ".join(started[held.worker]["argv"])
    worker_pid, horse_pid = started[held.worker]["pid"], claim.data["pid"]
    assert horse_pid != worker_pid
    (applied,) = [e for e in ledger if e.kind == events.FAULT_APPLIED]
    assert {worker_pid, horse_pid} <= set(applied.data["pids"]), applied.data
    assert claim.data["library_id"] == f"{held.worker}.{worker_pid}"  # RQ's worker name: rq worker --name
    assert claim.data["attempt"] == 1 and str(claim.data["token"]).endswith(":1")
    log = (result.dir / "logs" / f"{held.worker}.log").read_text()
    assert f"Worker {held.worker}.{worker_pid}: started with PID {worker_pid}" in log, log
    assert not run_processes(result.dir)
    return verdict


def test_a_killed_default_worker_leaves_its_job_started(tmp_path: Path) -> None:
    """RQ as shipped, held to a 5 s recovery it does not promise: the killed worker's job stays `started`
    in its StartedJobRegistry (its heartbeat TTL is 90 s, and maintenance runs every 600 s): stuck."""
    verdict = check_kill_run("kill_after_claim_before_effect", True, tmp_path)
    stuck = [v for v in verdict["violations"] if v["kind"] == "stuck"]
    assert len(stuck) == 1 and verdict["counts"]["stuck"] == 1


def test_the_tightened_monitoring_recovers_a_killed_workers_job(tmp_path: Path) -> None:
    """--job-monitoring-interval 1 --maintenance-interval 1 --worker-ttl 16 and Retry: another worker's
    maintenance collects the abandoned job about 61 s after the kill and retries it (a 65 s run)."""
    verdict = check_kill_run("kill_after_claim_before_effect", False, tmp_path)
    assert verdict["verdict"] == "pass" and verdict["counts"]["completed"] == 8
    assert 55 < verdict["recovery"]["max_s"] < 70, verdict["recovery"]
