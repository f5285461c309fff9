"""dramatiq_rabbitmq runs Dramatiq 2.2 itself (RabbitmqBroker and its own `dramatiq` worker CLI) with probes
sent from Dramatiq's documented middleware hooks. Through the CLI: `chaos target check` finds every seam
holding, the control vouching for Dramatiq's completion from the broker (the worker's ack says ok null:
Dramatiq emits after_ack even for an ack that failed), and a kill right after a claim gives the known
verdict: RabbitMQ requeues the dead consumer's delivery at once and another worker runs it. The claim
came from the worker process the `dramatiq` CLI forked, a child of the process the supervisor started."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaos import events
from chaos.known_answers import load
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import chaos

# The library adapters' tests run in the full tier, beside their known-answer cells (targets/libraries.toml):
# each starts a library's own worker, seconds apiece, and the README's test command stays within minutes.
pytestmark = pytest.mark.full
TARGET = "dramatiq_rabbitmq"
SCENARIO = "kill_after_claim_before_effect"
SUITE = Path(__file__).resolve().parents[2] / "targets" / TARGET / "known_answers.toml"
pytest.importorskip("dramatiq", reason="the dramatiq extra is not installed: pip install -e .[dramatiq]")


def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    (ack,) = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == "job-0001"]  # the fault-free job's
    answers = [e for e in ledger if e.kind == events.COMPLETION and e.job == "job-0001"]
    assert ack.data["ok"] is None and answers and answers[-1].data["outcome"] == "accepted"
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "Dramatiq '2.2.1' is booting up" in log and "Worker process is ready for action" in log, log


def test_the_kill_cell_recovers_the_killed_job_from_the_forked_worker(tmp_path: Path) -> None:
    (cell,) = [c for c in load(SUITE) if c.scenario == SCENARIO]
    result = chaos(*cell.argv(1, tmp_path))
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict == "pass"
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim was sent by the worker process the `dramatiq` CLI forked: its pid is the one the
    # worker's log names as the child of the process the supervisor started (Dramatiq's own entry point),
    # and the SIGKILL of the tree reached it.
    claims = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    assert "dramatiq" in started[held.worker]["argv"], started[held.worker]
    log = (result.dir / "logs" / f"{held.worker}.log").read_text()
    children = dict(re.findall(r"dramatiq worker process pid=(\d+) parent=(\d+)", log))
    assert children.get(str(claims[0].data["pid"])) == str(started[held.worker]["pid"]), (log, claims[0].data)
    assert re.search(rf"\b{claims[0].data['pid']}\b", fault["why"]), fault
    # Recovered: RabbitMQ requeued the dead consumer's delivery and another worker ran it.
    assert len(claims) == 2 and claims[1].worker != held.worker
    assert verdict["jobs"][held.job] == "completed" and not verdict["violations"]
    assert not run_processes(result.dir)
