"""arq_redis runs arq 0.28 itself (its own worker, `python -m arq worker.WorkerSettings`, from the virtualenv
ci/setup_arq.sh builds: arq pins redis<6) with probes sent from arq's documented hooks and the job function.
Through the CLI: `chaos target check` finds every seam holding (the control vouching for arq's own
completions from its stored result), the kill cell of the adapter's known answers gives its verdict with
the killed job run again by another worker once arq's in-progress key expired, the claims came from arq's
worker processes the supervisor started, and a missing virtualenv is an exit 2 that says how to build it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chaos import events
from chaos.known_answers import load
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import REPO, chaos

# The library adapters' tests run in the full tier, beside their known-answer cells (targets/libraries.toml):
# each starts a library's own worker, seconds apiece, and the README's test command stays within minutes.
pytestmark = pytest.mark.full
TARGET = "arq_redis"
SCENARIO = "kill_after_claim_before_effect"
VENV = Path(os.environ.get("CHAOS_ARQ_VENV") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            / "queue-chaos" / "venvs" / "arq-0.28.0")
needs_venv = pytest.mark.skipif(not (VENV / "bin" / "python").exists(),
                                reason=f"no arq virtualenv at {VENV}: build it with bash ci/setup_arq.sh")


@needs_venv
def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "the final snapshot shows job-0001 done" in result.stdout
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "Starting worker for 1 functions: chaos_job" in log, log
    # arq, not the job function, completed the job: the control answered from arq's stored result.
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    (ack,) = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == "job-0001"]  # the fault-free job
    (answer,) = [e for e in ledger if e.kind == events.COMPLETION and e.job == "job-0001"]
    assert ack.data["ok"] is None and answer.data["outcome"] == "accepted"


@needs_venv
def test_the_kill_cell_reruns_the_killed_job_after_the_in_progress_key_expires(tmp_path: Path) -> None:
    (cell,) = [c for c in load(REPO / "targets" / TARGET / "known_answers.toml")
               if c.scenario == SCENARIO and not c.params and not c.contract]
    result = chaos(*cell.argv(1, tmp_path))
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # Every claim was sent by an arq worker the supervisor started (arq's own CLI, by the venv's python
    # exec'd in the launcher's place: the same pid), from arq's on_job_start hook: token `<job id>:<try>`.
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    claims = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    assert [c.data["attempt"] for c in claims] == [1, 2]
    assert claims[0].worker == held.worker and claims[1].worker != held.worker
    for claim in claims:
        assert started[claim.worker]["pid"] == claim.data["pid"]
        assert "arq" in started[claim.worker]["argv"] and "worker.WorkerSettings" in started[claim.worker]["argv"]
        assert str(claim.data["token"]).endswith(f"{held.job}:{claim.data['attempt']}")
    # Not before arq's in-progress key (job_timeout 2 s + 10 s) ran out.
    assert claims[1].mono - claims[0].mono > 9.0
    assert verdict["jobs"][held.job] == "completed" and not verdict["violations"]
    assert not run_processes(result.dir)


def test_a_missing_virtualenv_is_a_usage_error(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path),
                   env={"CHAOS_ARQ_VENV": str(tmp_path / "no-venv")})
    assert result.code == 2, result.stdout + result.stderr
    assert "bash ci/setup_arq.sh" in result.stdout + result.stderr
