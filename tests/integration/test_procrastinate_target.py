"""procrastinate_pg runs procrastinate 3.10 itself (its own `procrastinate ... worker` CLI, its schema
applied by its own schema manager, jobs deferred by its own producer) with probes sent from a documented
task middleware. Through the CLI: `chaos target check` finds every seam holding, with the queue's own
record (a trigger on procrastinate_jobs) naming the claim and the completion; and the kill cell of the
adapter's known answers gives its verdict: under the documented stalled-job recipe (-p stalled_retry=on)
the killed worker's job is retried by the recipe (a release in procrastinate's own table, by the
reconciler) and claimed again by another procrastinate worker."""

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
TARGET = "procrastinate_pg"
SCENARIO = "kill_after_claim_before_effect"
CELLS = REPO / "targets" / TARGET / "known_answers.toml"
pytest.importorskip("procrastinate", reason="the procrastinate extra is not installed: pip install -e .[procrastinate]")


def kill_cell() -> Cell:
    (cell,) = [cell for cell in load(CELLS) if cell.target == TARGET and cell.scenario == SCENARIO
               and "stalled_retry=on" in cell.params]
    return cell


def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    assert "the observer recorded the queue's claim of job-0001 by w1" in result.stdout
    assert "the observer recorded the queue's completion of job-0001 by w1" in result.stdout


def test_the_kill_cell_is_recovered_by_the_stalled_job_recipe(tmp_path: Path) -> None:
    cell = kill_cell()
    result = chaos(*cell.argv(2, tmp_path))  # seed 2: the suite file runs seeds 1 to 3
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    assert verdict["evidence"]["claims"] == "queue"
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim was sent by the process the supervisor started: procrastinate's own worker CLI.
    claims = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    first = claims[0]
    assert first.worker == held.worker and started[held.worker]["pid"] == first.data["pid"]
    assert "procrastinate" in started[held.worker]["argv"] and "worker" in started[held.worker]["argv"]
    assert first.data["attempt"] == 1 and str(first.data["token"]).endswith(":1")
    # procrastinate's own table recorded the recipe's retry (by the reconciler's session) and the next claim.
    record = [(e.kind, e.worker) for e in ledger if e.kind.startswith(events.QUEUE_PREFIX) and e.job == held.job]
    assert record[:3] == [(events.QUEUE_CLAIM, held.worker), (events.QUEUE_RELEASE, "reconciler"),
                          (events.QUEUE_CLAIM, claims[1].worker)], record
    assert claims[1].worker != held.worker and claims[1].data["attempt"] == 2
    assert verdict["jobs"][held.job] == "completed" and not verdict["violations"]
    assert not run_processes(result.dir)
