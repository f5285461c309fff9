"""celery_redis runs Celery 5.7 itself (its `celery worker` CLI, the solo pool) on Redis, kombu's Redis transport,
with probes sent from Celery's documented task_prerun / task_postrun signals, the task body and its request class
(the broker's answer to the ack). Through the CLI: `chaos target check` finds every seam holding in both acks
variants (the ack reported as the broker took it), and the kill cell of the adapter's known answers gives its
verdict: the claim came from the `celery worker` process the supervisor started (the solo pool runs the task in
it), and the SIGKILL of that process ended the execution."""

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
TARGET = "celery_redis"
SUITE = Path(__file__).resolve().parents[2] / "targets" / TARGET / "known_answers.toml"
SCENARIO = "kill_after_claim_before_effect"


def cell(acks: str, scenario: str = SCENARIO) -> Cell:
    """The adapter's cell of `scenario` for `acks` (the early cells run target.toml's default: no -p)."""
    (found,) = [c for c in load_suite(SUITE).cells
                if c.target == TARGET and c.scenario == scenario and ("acks=late" in c.params) == (acks == "late")]
    return found


@pytest.mark.parametrize("acks", ["early", "late"])
def test_target_check_finds_every_seam_holding(acks: str, tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "-p", f"acks={acks}", "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "the final snapshot shows job-0001 done" in result.stdout
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "w1@chaos ready." in log and "Task chaos_job[" in log, log
    # Celery, not the task, acked the message: the worker watched kombu's ack go through (Redis ran the HDEL)
    # and reported it as the broker's word.
    assert "acked job-0001 and the queue accepted it (by the word of: broker)" in result.stdout


@pytest.mark.parametrize("acks", ["early", "late"])
def test_the_kill_cell_gives_its_known_verdict(acks: str, tmp_path: Path) -> None:
    known = cell(acks)
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


# (stop_owner_then_kill_next_owner, once here too, is skipped for the late variant: its lease_s = 3, the
# visibility timeout, is never renewed, and that scenario REQUIRES a renewed lease.)
@pytest.mark.parametrize("scenario", ["lease_shorter_than_handler"])
def test_a_takeover_still_running_at_the_end_finishes_its_task(scenario: str, tmp_path: Path) -> None:
    """A worker that took the long job over by the visibility timeout while its first owner still ran it
    is 3-4 s from the end of its handler when the first owner's completion drains the run. Celery's warm
    shutdown finishes that task within shutdown_grace_s, so its effect is always in the ledger: the overlap
    is counted on every run, where a 3 s grace cut the task tenths of a second either side of its effect."""
    known = cell("late", scenario)
    result = chaos(*known.argv(1, tmp_path), timeout=180)
    assert result.code == known.exit_code, result.stdout + result.stderr
    ledger = read_events(result.dir / "ledger.sqlite")
    assert not [e for e in ledger if e.kind == events.PROCESS_EXIT and e.data.get("forced")], "a worker was SIGKILLed"
    (long_job,) = {e.job for e in ledger if e.kind == events.ENQUEUE and e.data["handler_s"] > 0}
    effects = [e for e in ledger if e.kind == events.PROBE_EFFECT and e.job == long_job]
    first, takeover = effects[0], effects[-1]
    assert len(effects) == 2 and first.worker != takeover.worker
    token = takeover.data["token"]
    claimed = next(e for e in ledger if e.kind == events.PROBE_CLAIM and e.data["token"] == token)
    drained = next(e for e in ledger if e.kind == events.DRAINED)
    assert claimed.seq < first.seq < drained.seq < takeover.seq, "claimed while the first ran, effected after the drain"
    assert any(e.kind == events.PROBE_ACK and e.data["token"] == token for e in ledger)
    assert result.verdict["counts"]["overlapped"] == 1
    assert {k: result.verdict["counts"][k] for k in known.counts} == known.counts
    assert not run_processes(result.dir)
