"""A kill of the process that sent the held probe (scope "sender"): in a prefork worker, whose parent
forks a pool child to run jobs and forks a new one when it dies, the child alone is killed, its exit
journaled and proven, its job recovered by the worker's next child, and the worker itself lives on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from chaos import Event, RunOptions, Scenario, find_target, read_events, run_scenario
from chaos.discovery import bundled

PREFORK = '''"""A prefork worker: the parent forks a child running pg_lease's worker, and a new one when one dies."""
import os, runpy, signal, sys

child = 0

def forward(signum, frame):
    if child:
        os.kill(child, signal.SIGTERM)
    os.waitpid(child, 0)
    sys.exit(0)

signal.signal(signal.SIGTERM, forward)
while True:
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py"), run_name="__main__")
        os._exit(0)
    os.waitpid(child, 0)
'''


def prefork_target(tmp_path: Path) -> Path:
    folder = tmp_path / "pg_prefork"
    shutil.copytree(bundled("targets") / "pg_lease", folder, ignore=shutil.ignore_patterns(".mypy_cache"))
    toml = (folder / "target.toml").read_text().replace('name = "pg_lease"', 'name = "pg_prefork"')
    (folder / "target.toml").write_text(toml.replace('"{target_dir}/worker.py"', '"{target_dir}/prefork.py"'))
    (folder / "prefork.py").write_text(PREFORK)
    return folder


def run(tmp_path: Path, scope: str) -> tuple[Any, list[Event], dict[str, Any]]:
    seen: dict[str, Any] = {}

    def body(ctx: Any) -> None:
        """Kill the held probe's sender (or the whole tree) right after its effect, before its ack."""
        ctx.enqueue(4)
        gate = ctx.arm("after:effect", nth=1)
        seen["worker"] = ctx.start_worker()
        seen["held"] = ctx.kill_held(gate, scope=scope)
        if scope == "tree":
            ctx.start_worker()
        ctx.wait_drained(ctx.recovery_deadline(margin_s=10.0))

    scenario = Scenario(f"kill_{scope}", Path(__file__), body.__doc__ or "", body, ("kill",))
    result = run_scenario(find_target(str(prefork_target(tmp_path))), scenario,
                          RunOptions(seed=1, runs_dir=tmp_path / "runs"))
    return result.verdict, read_events(result.dir / "ledger.sqlite"), seen


def test_a_sender_kill_ends_the_pool_child_alone_and_its_job_is_recovered(tmp_path: Path) -> None:
    verdict, ledger, seen = run(tmp_path, "sender")
    assert verdict.verdict == "pass", (verdict.violations, verdict.notes, verdict.error)
    assert [f.exercised for f in verdict.faults] == [True]
    starts = [e for e in ledger if e.kind == "process.start"]
    assert len(starts) == 1, "one worker process for the whole run: its parent lived on"
    root, held = starts[0].data["pid"], seen["held"]
    assert held.pid != root, "the probe came from the pool child"
    exits = [e for e in ledger if e.kind == "process.exit"]
    killed = [e for e in exits if e.data["pid"] == held.pid]
    assert [e.data.get("signal") for e in killed] == ["SIGKILL"]
    root_exit = next(e for e in exits if e.data["pid"] == root)
    assert root_exit.seq > next(e for e in ledger if e.kind == "drained").seq, "the parent outlived the drain"
    claims = [e for e in ledger if e.kind == "probe.claim" and e.job == held.job]
    assert len(claims) == 2 and claims[1].data["pid"] not in (root, held.pid), "a new child took the job back"
    assert verdict.jobs[held.job] == "redelivered"


def test_near_miss_a_tree_kill_takes_the_parent_too(tmp_path: Path) -> None:
    verdict, ledger, seen = run(tmp_path, "tree")
    assert verdict.verdict == "pass", (verdict.violations, verdict.notes, verdict.error)
    root = next(e for e in ledger if e.kind == "process.start").data["pid"]
    root_exit = next(e for e in ledger if e.kind == "process.exit" and e.data["pid"] == root)
    drained = next(e for e in ledger if e.kind == "drained")
    assert root_exit.data.get("signal") == "SIGKILL" and root_exit.seq < drained.seq
