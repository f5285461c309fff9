"""The heartbeat gap rule through the CLI (issue 17): pg_lease's real worker, alone with one long job, so
nobody reclaims it and every extension succeeds. Told (-c heartbeat_s) to extend less often than its
1 s lease, it holds the job past its lease each time: a `heartbeat_gap` violation. Just under the lease,
it passes."""

from __future__ import annotations

from pathlib import Path

from chaos.leftovers import run_processes
from tests.integration.runner import CliResult, chaos

ALONE = '''"""One worker, one job longer than the lease: nobody may take it, so every extension succeeds."""

FAULTS = ()


def run(ctx):
    ctx.enqueue(1, handler_s=4.0)
    ctx.start_worker()
    ctx.wait_drained(20)
'''


def run(tmp_path: Path, heartbeat_s: str) -> CliResult:
    path = tmp_path / "alone.py"
    path.write_text(ALONE)
    result = chaos("run", "--target", "pg_lease", "--scenario", str(path), "--seed", "1", "-c",
                   f"heartbeat_s={heartbeat_s}", "--runs-dir", str(tmp_path / "runs"))
    assert not run_processes(result.dir)
    return result


def test_extensions_further_apart_than_the_lease_fail(tmp_path: Path) -> None:
    result = run(tmp_path, "1.5")
    assert result.code == 1, result.stdout + result.stderr
    (violation,) = result.verdict["violations"]
    assert violation["kind"] == "heartbeat_gap" and violation["detail"]["gap_s"] > 1.25, violation
    assert "violation heartbeat_gap" in result.stdout
    assert result.verdict["counts"]["completed"] == 1, "the queue did the job; its owner held it past its lease"


def test_extensions_just_under_the_lease_pass(tmp_path: Path) -> None:
    result = run(tmp_path, "0.9")
    assert result.code == 0, result.stdout + result.stderr
    assert result.verdict["counts"]["completed"] == 1
