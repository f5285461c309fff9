"""Verdicts from probes in flight (issue 17), through the CLI against real PostgreSQL and pg_lease's real
worker: a claim probe sent just before a SIGSTOP, or a SIGKILL and reap, but committed to the ledger after
it. The sink's `before:claim` gate holds the report, as a slow sink or network would; the worker already
committed the claim in the queue and stamped its send time. Each case has a near miss, a real violation
that must still be named, and named on the right worker."""

from __future__ import annotations

import shutil
from pathlib import Path

from chaos import events
from chaos.discovery import bundled
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import REPO, CliResult, chaos

HEAD = '''"""A claim in flight across a fault, for this test."""

FAULTS = ({fault!r},)


def run(ctx):
    (job,) = ctx.enqueue(1, handler_s=0.5)  # the next owner acks after the late claim is in
    gate = ctx.arm("before:claim", job=job)
    ctx.start_worker()
    held = ctx.wait(gate)  # the owner committed its claim and sent the probe; the sink holds it
    ctx.start_worker()
'''

STOP = HEAD.format(fault="stop") + '''
    ctx.stop_until(held.worker, ctx.probe_of("claim", job, not_worker=held.worker), ctx.recovery_deadline())
    ctx.release(gate)  # committed after the SIGCONT, and after the next owner's claim
    ctx.wait_for(ctx.execution_ended(job, held.token), 30, "the first owner giving up the job it lost")
    ctx.wait_drained(ctx.recovery_deadline())
'''

KILL = HEAD.format(fault="kill") + '''
    ctx.kill(held.worker, scope="process")  # its helper keeps the claim's connection open; the kill is reaped
    ctx.release(gate)  # committed after the reaped exit
    ctx.wait_for(ctx.probe_of("claim", job, worker=held.worker), 30, "the dead owner's claim")
    ctx.wait_drained(ctx.recovery_deadline())
'''


def run(tmp_path: Path, scenario: str, *extra: str, target: str | Path = "pg_lease") -> CliResult:
    path = tmp_path / "in_flight.py"
    path.write_text(scenario)
    result = chaos("run", "--target", str(target), "--scenario", str(path), "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"), *extra)
    assert not run_processes(result.dir)
    return result


def outliving_target(tmp_path: Path) -> Path:
    """pg_lease whose claim reports leave from a helper process that outlives a SIGKILL of the worker."""
    path = tmp_path / "pg_lease_claim_outlives"
    shutil.copytree(bundled("targets") / "pg_lease", path, ignore=shutil.ignore_patterns("__pycache__"))
    wrapper = REPO / "tests" / "workers" / "claim_outlives_worker.py"
    toml = (path / "target.toml").read_text().replace('name = "pg_lease"', 'name = "pg_lease_claim_outlives"')
    toml = toml.replace('worker = ["{python}", "{target_dir}/worker.py"]',
                        f'worker = ["{{python}}", "{wrapper}", "{{target_dir}}/worker.py"]')
    (path / "target.toml").write_text(toml)
    return path


def kinds(result: CliResult) -> set[str]:
    return {v["kind"] for v in result.verdict["violations"]}


def committed_late(result: CliResult, after: str) -> None:
    """The ledger shows the case: the first owner's claim committed after `after` (the stop's heal, or the
    owner's reaped exit), carrying a send time from before the fault."""
    ledger = read_events(result.dir / "ledger.sqlite")
    fault = next(e for e in ledger if e.kind == events.FAULT)
    (claim,) = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.worker == fault.worker]
    marker = next(e for e in ledger if e.kind == after and e.worker == fault.worker)
    assert claim.seq > marker.seq, "the claim was committed after the fault had ended or the worker was reaped"
    assert claim.data["sent"] < fault.mono, "the claim was sent before the fault"


def test_a_claim_sent_before_a_stop_and_committed_after_it_passes(tmp_path: Path) -> None:
    result = run(tmp_path, STOP)
    assert result.code == 0, result.stdout + result.stderr
    committed_late(result, events.FAULT_HEALED)
    assert result.verdict["counts"]["completed"] == 1 and result.verdict["counts"]["effects"] == 1
    assert all(f["exercised"] for f in result.verdict["faults"])


def test_a_stale_ack_by_a_stopped_owner_with_its_claim_in_flight_still_fails(tmp_path: Path) -> None:
    """Without watchdog or conditional ack, the first owner completes the job it lost after the SIGCONT: its
    accepted ack is the stale one (read at arrival, the rightful new owner's was called stale instead)."""
    result = run(tmp_path, STOP, "-p", "ack=unconditional", "-p", "watchdog=off")
    assert result.code == 1, result.stdout + result.stderr
    assert "stale_ack_accepted" in kinds(result) and "premature_reclaim" not in kinds(result), result.stdout
    stale = [v for v in result.verdict["violations"] if v["kind"] == "stale_ack_accepted"]
    assert [(v["detail"]["worker"], v["detail"]["owner"]) for v in stale] == [("w1", "w2")]


def test_a_claim_committed_after_its_worker_was_killed_and_reaped_passes(tmp_path: Path) -> None:
    result = run(tmp_path, KILL, target=outliving_target(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    committed_late(result, events.PROCESS_EXIT)
    assert "process alive" not in result.stdout
    assert result.verdict["recovery"]["jobs"], "the next owner's claim recovered the job the kill took"


def test_an_early_reclaim_from_a_killed_owner_with_its_claim_in_flight_still_fails(tmp_path: Path) -> None:
    result = run(tmp_path, KILL, "-p", "reclaim=early", target=outliving_target(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    assert kinds(result) == {"early_reclaim"}, result.stdout
    assert "process alive" not in result.stdout
