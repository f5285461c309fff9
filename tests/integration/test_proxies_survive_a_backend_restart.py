"""A backend restart keeps the workers' proxies: the server comes back on the same port, so each worker's
proxy still leads to it, and the workers finish their jobs through it."""

from __future__ import annotations

from pathlib import Path

from chaos import Context, RunOptions, Scenario, find_target, read_events, run_scenario


def restart_behind_proxies(ctx: Context) -> None:
    ctx.enqueue(4, handler_s=0.2)
    worker = ctx.start_worker()
    ctx.restart_backend("immediate")
    slow = ctx.latency(worker, ms=1)  # a network fault, so that the run gives the worker a proxy
    ctx.wait_drained(ctx.recovery_deadline(margin_s=10.0))
    ctx.heal(slow)


def test_workers_finish_through_their_proxies_after_a_backend_restart(tmp_path: Path) -> None:
    scenario = Scenario("restart_behind_proxies", Path(__file__), "", restart_behind_proxies,
                        ("backend_restart", "latency"))
    result = run_scenario(find_target("pg_lease"), scenario, RunOptions(seed=1, runs_dir=tmp_path))
    assert result.verdict.verdict == "pass", result.verdict
    assert result.verdict.counts["completed"] == 4
    assert result.verdict.network is not None and result.verdict.network["kind"] == "embedded"
    kinds = [e.kind for e in read_events(result.dir / "ledger.sqlite")]
    assert kinds.index("network.start") < kinds.index("backend.restart") < kinds.index("drained")
