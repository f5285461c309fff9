"""celery_rabbitmq runs Celery 5.7 itself (its `celery worker` CLI, the solo pool) on RabbitMQ, with probes sent
from Celery's documented task_prerun / task_postrun signals and the task body. Through the CLI: `chaos target
check` finds every seam holding in both acks variants (the control vouching for Celery's own completions from
its result backend), and the kill cell of the adapter's known answers gives its verdict: the claim came from
the `celery worker` process the supervisor started (the solo pool runs the task in it), and the SIGKILL of
that process ended the execution."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.suite.cell import Cell
from chaos.suite.spec import load_suite
from tests.integration.runner import chaos

pytest.importorskip("celery", reason="the celery extra is not installed: pip install -e .[celery]")

# The library adapters' tests run in the full tier, beside their known-answer cells (targets/libraries.toml):
# each starts a library's own worker, seconds apiece, and the README's test command stays within minutes.
pytestmark = pytest.mark.full
TARGET = "celery_rabbitmq"
SUITE = Path(__file__).resolve().parents[2] / "targets" / TARGET / "known_answers.toml"
SCENARIO = "kill_after_claim_before_effect"


def kill_cell(acks: str) -> Cell:
    """The adapter's cell of SCENARIO for `acks` (the early cells run target.toml's default: no -p)."""
    (found,) = [c for c in load_suite(SUITE).cells
                if c.target == TARGET and c.scenario == SCENARIO and ("acks=late" in c.params) == (acks == "late")]
    return found


@pytest.mark.parametrize("acks", ["early", "late"])
def test_target_check_finds_every_seam_holding(acks: str, tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "-p", f"acks={acks}", "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "the final snapshot shows job-0001 done" in result.stdout
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "w1@chaos ready." in log and "Task chaos_job[" in log, log
    # Celery, not the task, acked the message, and AMQP confirms no ack: the worker reported it with ok null,
    # and the control answered from Celery's result backend, which proves the task ran and decides no ack.
    assert "acked job-0001 with ok null, and the control says a result store holds its result" in result.stdout


@pytest.mark.parametrize("acks", ["early", "late"])
def test_the_kill_cell_gives_its_known_verdict(acks: str, tmp_path: Path) -> None:
    known = kill_cell(acks)
    result = chaos(*known.argv(1, tmp_path), timeout=120)
    assert result.code == known.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == known.verdict
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim was sent by the `celery worker` process the supervisor started (the solo pool runs the
    # task in it), from Celery's task_prerun signal, naming Celery's own hostname for the worker.
    claim = next(e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job)
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    argv = " ".join(started[held.worker]["argv"])
    assert "-m celery -A worker worker --pool solo" in argv, argv
    assert claim.worker == held.worker and started[held.worker]["pid"] == claim.data["pid"]
    assert claim.data["library_id"] == f"{held.worker}@chaos" and claim.data["attempt"] == 1
    (applied,) = [e for e in ledger if e.kind == events.FAULT_APPLIED]
    assert claim.data["pid"] in applied.data["pids"]
    # Either way the killed job was delivered again to another worker: acks=late by the promise, acks=early
    # against it (the finding in the adapter's README).
    claims = [e.worker for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    assert claims[0] == held.worker and len(claims) == 2 and claims[1] != held.worker
    if known.verdict == "fail":
        assert [(v["kind"], v["job"]) for v in verdict["violations"]] == [("redelivered_after_owner_loss", held.job)]
    else:
        assert not verdict["violations"] and verdict["jobs"][held.job] == "completed"
    assert not run_processes(result.dir)
