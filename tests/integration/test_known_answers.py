"""Known answers on real PostgreSQL beyond the matrix's seed: a correct target passes with another seed,
a broken one fails with the right violation, and the ledger shows the exact window the kill hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.leftovers import run_processes
from tests.integration.runner import chaos

SCENARIO = "kill_after_effect_before_ack"


# Row and advisory locks end with the killed worker's session: their recovery is well under a second.
CORRECT_TARGETS = {"pg_lease": None, "pg_txlock": 1.0, "pg_advisory": 1.0, "pg_lifeline": None}


@pytest.mark.parametrize("target", sorted(CORRECT_TARGETS))
def test_correct_targets_redeliver_the_killed_job_within_their_bound(tmp_path: Path, target: str) -> None:
    seed = 2  # seed 1 is the matrix's (targets/known_answers.toml)
    result = chaos("run", "--target", target, "--scenario", SCENARIO, "--seed", str(seed),
                   "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == "pass" and verdict["target"] == target
    counts = verdict["counts"]
    assert counts["enqueued"] == 8 and counts["redelivered"] == 1 and counts["completed"] == 7
    assert counts["lost"] == 0 and counts["stuck"] == 0 and counts["effects"] == 9
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"]
    (job,) = [j for j, outcome in verdict["jobs"].items() if outcome == "redelivered"]
    (recovery,) = verdict["recovery"]["jobs"][job]
    assert recovery <= verdict["contract"]["recovery_bound_s"]
    fast = CORRECT_TARGETS[target]
    if fast is not None:
        assert recovery < fast
    assert "PASS" in result.stdout and f"--seed {seed}" in result.stdout
    assert not run_processes(result.dir)


def test_pg_lease_second_effect_is_by_another_worker_within_the_bound(tmp_path: Path) -> None:
    from chaos.ledger import read_events

    result = chaos("run", "--target", "pg_lease", "--scenario", SCENARIO, "--seed", "7", "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert result.run_dir is not None
    events = read_events(result.run_dir / "ledger.sqlite")
    (job,) = [j for j, o in result.verdict["jobs"].items() if o == "redelivered"]
    effects = [e for e in events if e.kind == "probe.effect" and e.job == job]
    kill = next(e for e in events if e.kind == "fault.applied")
    assert len(effects) == 2 and effects[0].worker != effects[1].worker
    assert effects[0].seq < kill.seq < effects[1].seq
    assert effects[1].mono - kill.mono <= result.verdict["contract"]["recovery_bound_s"]


def test_report_recomputes_the_verdict_from_the_ledger_alone(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_naive", "--scenario", SCENARIO, "--seed", "3", "--runs-dir", str(tmp_path))
    assert result.run_dir is not None
    original = result.verdict
    (result.run_dir / "verdict.json").unlink()
    again = chaos("report", str(result.run_dir), runs_dir=tmp_path)
    assert again.code == 1
    assert again.verdict["violations"] == original["violations"]
    assert again.verdict["counts"] == original["counts"]


def test_a_gate_that_never_matches_makes_the_run_inconclusive_not_pass(tmp_path: Path) -> None:
    scenario = tmp_path / "aim_at_nothing.py"
    scenario.write_text('"""Arms a gate on a job that does not exist."""\n\n'
                        "FAULTS = ()\n\n\n"
                        "def run(ctx):\n"
                        "    ctx.enqueue(2)\n"
                        "    gate = ctx.arm('after:effect', job='no-such-job')\n"
                        "    ctx.start_worker()\n"
                        "    ctx.wait_drained(10.0)\n"
                        "    ctx.wait(gate, 0.5)\n")
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 4, result.stdout + result.stderr
    assert result.verdict["verdict"] == "inconclusive" and result.verdict["counts"]["completed"] == 2
    assert "never matched" in result.stdout
    assert not run_processes(result.dir)
