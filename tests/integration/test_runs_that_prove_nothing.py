"""Exit 0 means a proven pass (issue 17): a run that judged no job, or never injected a fault its scenario
declares, is inconclusive (exit 4) saying why; a request to the sink without the run's token is reported,
but cannot turn a run into an error blaming the target's workers. Each test runs the CLI."""

from __future__ import annotations

from pathlib import Path

from chaos.leftovers import run_processes
from tests.integration.runner import CliResult, chaos

SCENARIO = '''"""A scenario of this test."""
import json
import urllib.error
import urllib.request

FAULTS = {faults}


def run(ctx):
{body}
'''


def scenario(tmp_path: Path, body: str, faults: str = "()") -> Path:
    path = tmp_path / "mine.py"
    path.write_text(SCENARIO.format(faults=faults, body="\n".join(f"    {line}" for line in body.splitlines())))
    return path


def run(tmp_path: Path, scenario_path: Path) -> CliResult:
    return chaos("run", "--target", "pg_lease", "--scenario", str(scenario_path), "--seed", "1",
                 "--runs-dir", str(tmp_path / "runs"))


def assert_inconclusive(result: CliResult, reason: str) -> None:
    assert result.code == 4, result.stdout + result.stderr
    assert result.stdout.startswith("INCONCLUSIVE"), result.stdout
    assert reason in result.stdout, result.stdout
    verdict = result.verdict
    assert verdict["verdict"] == "inconclusive" and any(reason in note for note in verdict["notes"])
    assert not run_processes(result.dir)
    again = chaos("report", str(result.dir), runs_dir=tmp_path_of(result))
    assert again.code == 4 and reason in again.stdout, again.stdout + again.stderr  # recomputed from the ledger


def tmp_path_of(result: CliResult) -> Path:
    return result.dir.parent


def test_a_scenario_that_does_nothing_is_inconclusive(tmp_path: Path) -> None:
    assert_inconclusive(run(tmp_path, scenario(tmp_path, "pass")), "no job was enqueued")


def test_a_scenario_that_enqueues_no_job_is_inconclusive(tmp_path: Path) -> None:
    body = "ctx.enqueue(0)\nctx.start_worker()\nctx.wait_drained(5)"
    assert_inconclusive(run(tmp_path, scenario(tmp_path, body)), "no job was enqueued")


def test_a_declared_kill_never_injected_is_inconclusive(tmp_path: Path) -> None:
    body = "ctx.enqueue(3)\nctx.start_worker()\nctx.wait_drained(20)"
    result = run(tmp_path, scenario(tmp_path, body, faults='("kill",)'))
    assert_inconclusive(result, "declares the fault(s) kill")
    assert result.verdict["counts"]["completed"] == 3, "the jobs were done; the kill it declared never happened"


def test_a_request_without_the_run_token_is_reported_and_the_run_still_passes(tmp_path: Path) -> None:
    """Mid-run, with a worker at work, a stranger POSTs a claim to the sink without the token."""
    body = '''ctx.enqueue(4)
ctx.start_worker()
ctx.wait_for(ctx.probe_of("claim", "job-0001"), 30, "the first claim")
request = urllib.request.Request(ctx.sink.url + "/probe/claim", data=json.dumps({"job": "job-0001"}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
try:
    urllib.request.urlopen(request, timeout=10)
    raise AssertionError("the sink took a probe without the run's token")
except urllib.error.HTTPError as exc:
    assert exc.code == 401, exc.code
ctx.wait_drained(20)'''
    result = run(tmp_path, scenario(tmp_path, body))
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS"), result.stdout
    assert "no valid run token" in result.stdout, result.stdout
    verdict = result.verdict
    assert verdict["counts"]["completed"] == 4
    assert [(r["from"], r["status"]) for r in verdict["refused"]] == [("stranger", 401)]
    assert verdict["error"] is None
