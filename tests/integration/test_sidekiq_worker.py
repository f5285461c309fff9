"""A worker in another language: sidekiq_basic runs Sidekiq 6.4 itself (Ruby, Debian's ruby-sidekiq), whose
middleware and job class speak the probe protocol with Net::HTTP (docs/probe-protocol.md). Through the
CLI, its losing cell names the killed job `lost`, and the ledger's probes come from the Ruby process the
supervisor started, not from anything of the suite's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chaos import events
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import chaos

TARGET = "sidekiq_basic"

# The bundled kill_after_claim_before_effect, with a look at the process that sent the held claim while
# it is alive: the scenario writes what it saw beside itself.
LOOKING_SCENARIO = '''"""Kill the owner right after its claim, having looked at the process that sent the claim."""

from __future__ import annotations

import json
from pathlib import Path

import psutil

from chaos import Context

FAULTS = ("kill",)
SEEN = Path(__file__).with_suffix(".seen.json")


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(4)
    gate = ctx.arm("after:claim", job=jobs[1])
    ctx.start_worker()
    held = ctx.wait(gate)
    process = psutil.Process(held.pid)
    SEEN.write_text(json.dumps({"pid": held.pid, "worker": held.worker, "exe": process.exe(),
                                "cmdline": process.cmdline()}))
    ctx.kill(held.worker, gate=gate)
    ctx.release(gate)
    ctx.start_worker()
    ctx.wait_drained(ctx.recovery_deadline())
'''


def test_the_losing_cell_names_the_killed_job_lost_and_its_probes_came_from_sidekiq(tmp_path: Path) -> None:
    result = chaos("run", "--target", TARGET, "--scenario", "kill_after_claim_before_effect", "--seed", "1",
                   "--runs-dir", str(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == "fail" and result.stdout.startswith("FAIL")
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    lost = [v for v in verdict["violations"] if v["kind"] == "lost"]
    assert [v["job"] for v in lost] == [held.job], verdict["violations"]
    assert {v["kind"] for v in verdict["violations"]} == {"lost"}
    assert verdict["counts"]["lost"] == 1 and verdict["counts"]["completed"] == 7

    # The held claim came from the killed worker's process: the one the supervisor started as Sidekiq's
    # CLI, whose own log (Sidekiq prints its pid on every line) says it ran in Ruby.
    claim = next(e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job)
    assert claim.worker == held.worker and claim.data["pid"] == held.data["pid"]
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    assert started[held.worker]["pid"] == claim.data["pid"]
    assert started[held.worker]["argv"][:2] == ["sidekiq", "-r"], started[held.worker]
    log = (result.dir / "logs" / f"{held.worker}.log").read_text()
    assert f"pid={claim.data['pid']} " in log and re.search(r"Booting Sidekiq 6\.4\.\d", log), log[-2000:]
    assert re.search(rf"pid={claim.data['pid']} .*Running in ruby 3\.", log), log[-2000:]
    # The claim carries what the Ruby worker sends: the jid as its token, the attempt, both clocks.
    assert re.fullmatch(r"[0-9a-f]{24}", claim.data["token"]) and claim.data["attempt"] == 1
    assert isinstance(claim.data["clock"], float) and isinstance(claim.data["sent"], float)
    effects = [e for e in ledger if e.kind == events.PROBE_EFFECT]
    assert len(effects) == 7 and all(e.data["accepted"] and e.data["fence"] == 1 for e in effects)
    assert not run_processes(result.dir)


def test_the_held_claims_sender_is_a_live_ruby_sidekiq_process(tmp_path: Path) -> None:
    scenario = tmp_path / "look_then_kill.py"
    scenario.write_text(LOOKING_SCENARIO)
    result = chaos("run", "--target", TARGET, "--scenario", str(scenario), "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 1, result.stdout + result.stderr
    seen = json.loads(scenario.with_suffix(".seen.json").read_text())
    assert Path(seen["exe"]).name.startswith("ruby"), seen
    # Sidekiq's proctitle ("sidekiq 6.4.1  [1 of 1 busy]") once its heartbeat thread has set it; before,
    # the interpreter's argv: ruby, then the sidekiq script its shebang named.
    assert (seen["cmdline"][0].startswith("sidekiq 6.4")
            or [Path(arg).name for arg in seen["cmdline"][1:2]] == ["sidekiq"]), seen
    ledger = read_events(result.dir / "ledger.sqlite")
    started = {e.worker: e.data["pid"] for e in ledger if e.kind == events.PROCESS_START}
    assert started[seen["worker"]] == seen["pid"]
    (lost,) = [v for v in result.verdict["violations"] if v["kind"] == "lost"]
    assert lost["job"] == "job-0002"
    assert not run_processes(result.dir)
