"""pgqueuer_pg runs pgqueuer 1.6 itself (its own worker loop, `pgqueuer.run`, on a psycopg connection) with
probes sent from its entrypoint and an observer on pgqueuer's own table. Through the CLI: `chaos target check`
finds every seam holding (the observer recording pgqueuer's pick and its DELETE of the finished row, the
control vouching for pgqueuer's own completion from pgqueuer_log), and the kill cell of the adapter's
known-answer file gives its known verdict: the killed worker's job is re-picked by another worker once its
heartbeat is older than heartbeat_timeout, judged from pgqueuer's own record."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.known_answers import Cell, load
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import REPO, chaos

# The library adapters' tests run in the full tier, beside their known-answer cells (targets/libraries.toml):
# each starts a library's own worker, seconds apiece, and the README's test command stays within minutes.
pytestmark = pytest.mark.full
TARGET = "pgqueuer_pg"
SCENARIO = "kill_after_claim_before_effect"
pytest.importorskip("pgqueuer", reason="the pgqueuer extra is not installed: pip install -e .[pgqueuer]")


def kill_cell() -> Cell:
    (cell,) = [cell for cell in load(REPO / "targets" / TARGET / "known_answers.toml")
               if cell.target == TARGET and cell.scenario == SCENARIO and not cell.contract and not cell.params]
    return cell


def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "w1 claimed job-0001 with token" in result.stdout
    assert "the observer recorded the queue's claim of job-0001 by w1" in result.stdout
    assert "the observer recorded the queue's completion of job-0001 by w1" in result.stdout
    # pgqueuer, not the entrypoint, completed the job: the worker's ack could not vouch for it, and the control
    # answered from pgqueuer_log that the completion took effect.
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    (ack,) = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == "job-0001"]  # the fault-free job
    (answer,) = [e for e in ledger if e.kind == events.COMPLETION and e.job == "job-0001"]
    assert ack.data["ok"] is None and answer.seq > ack.seq
    # The answer names its source: pgqueuer_log is the queue's record of whose ack completed the job, which
    # decides the ack (a result store would prove the job completed, no ack); so the verdict's acks are the queue's.
    assert answer.data == {"token": ack.data["token"], "outcome": "accepted", "source": "queue"}
    assert result.verdict["evidence"]["claims"] == "queue" and result.verdict["evidence"]["acks"] == "queue"


def test_the_kill_cell_is_judged_from_pgqueuers_record(tmp_path: Path) -> None:
    cell = kill_cell()
    result = chaos(*cell.argv(2, tmp_path))  # seed 2: the suite file's stability runs used 1..3
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    for key, value in cell.counts.items():
        assert verdict["counts"][key] == value, (key, verdict["counts"])
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim was sent by the worker process the supervisor started (worker.py, which runs
    # pgqueuer.run), from pgqueuer's entrypoint: its token is pgqueuer's job id, queue_manager_id and attempts,
    # and pgqueuer's own table recorded that very pick by that worker's session.
    claims = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    assert claims[0].worker == held.worker and started[held.worker]["pid"] == claims[0].data["pid"]
    assert any(str(arg).endswith("pgqueuer_pg/worker.py") for arg in started[held.worker]["argv"])
    picks = [e for e in ledger if e.kind == events.QUEUE_CLAIM and e.job == held.job]
    assert picks[0].worker == held.worker and picks[0].data["token"] == claims[0].data["token"]
    # pgqueuer re-picked the dead worker's job: another worker claimed it (in the probes and in the record)
    # and pgqueuer deleted the finished row.
    assert len(claims) == 2 and claims[1].worker != held.worker
    assert [e.worker for e in picks] == [c.worker for c in claims]
    assert [e.worker for e in ledger if e.kind == events.QUEUE_COMPLETE and e.job == held.job] == [claims[1].worker]
    assert verdict["evidence"]["claims"] == "queue" and verdict["evidence"]["completions"] == "queue"
    assert not run_processes(result.dir)
