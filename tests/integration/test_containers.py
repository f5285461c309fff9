"""Containers for real: servers in containers of their own (the docker provider), workers in containers,
and the container faults, against a real Docker engine and images built here. Where no engine runs, every
test here skips with the reason `chaos doctor` prints for it.

- The known answers hold on containers (targets/containers.toml, through `chaos suite`): the
  kill-after-effect, stop-past-deadline, restart-backend and partition answers on PostgreSQL and Redis,
  disconnect, and pause.
- A pause reaches what a SIGSTOP of the worker's process tree does not: a heartbeat sidecar the worker
  daemonised. The proof is in the ledger: the pause froze the sidecar's pid, the stop never signalled it.
- A SIGKILLed runner leaves its containers, network and volume; `chaos clean` removes them all, by their
  labels, and says so.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaos import events
from chaos.containers import engine
from chaos.doctor import docker_skip_reason
from chaos.known_answers import bundled_scenarios
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.suite.spec import load_suite
from tests.integration.runner import REPO, chaos

SKIP = docker_skip_reason()
pytestmark = [pytest.mark.full, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]
SUITE = REPO / "targets" / "containers.toml"
SIDECAR = ("-p", "heartbeat=sidecar", "-p", "ack=unconditional", "-p", "watchdog=off")


def left_of(run_id: str) -> list[str]:
    return [f"{kind} {engine.name_of(thing)}" for kind in ("containers", "networks", "volumes")
            for thing in engine.owned(kind, run_id)]


def test_the_known_answers_hold_on_containers(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    result = chaos("suite", str(SUITE), "-j", "2", "--out", str(out), runs_dir=tmp_path, timeout=1800)
    document = json.loads((out / "suite.json").read_text())
    wrong = [f"{c['variant']} x {c['scenario_variant']}: {c['status']}: {'; '.join(c['reasons'])} ({c['run_dir']})"
             for c in document["cells"] if c["status"] != "pass"]
    assert result.code == 0 and not wrong, "\n".join(wrong) + result.stderr
    cells = load_suite(SUITE).cells
    assert len(document["cells"]) == len(cells)
    asked = {(cell.target, cell.scenario) for cell in cells if cell.backend == "docker"}
    for target in ("pg_lease", "redis_reliable"):  # the answers the issue names, on both kinds
        for scenario in ("kill_after_effect_before_ack", "stop_past_deadline", "restart_backend_during_recovery",
                         "partition_worker_from_broker"):
            assert (target, scenario) in asked
    assert {"pause_past_deadline", "disconnect_backend_during_recovery"} <= set(bundled_scenarios())
    for cell in document["cells"]:
        run_dir = out / cell["run_dir"]
        assert not run_processes(run_dir), run_dir
        assert not left_of(run_dir.name), run_dir


def faulted(run_dir: Path) -> tuple[list[int], set[int], int]:
    """The pids the run's one fault reached; the host pids of its target's sidecars (processes other than
    the worker's own that sent heartbeats: the sink names every probe by its host pid); and how many
    heartbeats the target sent while the fault lasted."""
    ledger = read_events(run_dir / "ledger.sqlite")
    target = next(e for e in ledger if e.kind == events.FAULT).data["target"]
    applied = next(e for e in ledger if e.kind == events.FAULT_APPLIED)
    healed = next(e for e in ledger if e.kind == events.FAULT_HEALED)
    own = {e.data["pid"] for e in ledger if e.kind == events.PROCESS_START and e.worker == target}
    beats = [e for e in ledger if e.kind == events.PROBE_HEARTBEAT and e.worker == target]
    during = [e for e in beats if applied.seq < e.seq < healed.seq and e.data.get("ok")]
    return list(applied.data["pids"]), {e.data["pid"] for e in beats} - own, len(during)


def test_a_pause_reaches_the_sidecar_a_stop_of_the_tree_misses(tmp_path: Path) -> None:
    common = ("--target", "pg_lease", "--seed", "1", "--worker-image", "queue-chaos/python", *SIDECAR)
    stopped = chaos("run", "--scenario", "stop_past_deadline", *common, "--runs-dir", str(tmp_path / "stop"))
    paused = chaos("run", "--scenario", "pause_past_deadline", *common, "--runs-dir", str(tmp_path / "pause"))
    # uncaught: the sidecar kept the stopped owner's lease, so nobody claimed the job and the run says that
    # its premise never held (inconclusive), not that the ack was judged
    assert stopped.code == 4 and any(n.startswith("premise not held") for n in stopped.verdict["notes"]), stopped.stdout
    assert paused.code == 1 and paused.verdict["violations"][0]["kind"] == "stale_ack_accepted", paused.stdout
    stop_pids, stop_sidecars, beats_in_stop = faulted(stopped.dir)
    pause_pids, pause_sidecars, beats_in_pause = faulted(paused.dir)
    # The stop reached the worker's own process alone (its sidecar had left its tree), and the sidecar beat
    # on meanwhile; the pause froze the container's init, the worker and its sidecar, and nothing beat.
    assert stop_sidecars and not stop_sidecars & set(stop_pids) and beats_in_stop > 0, (stop_pids, stop_sidecars)
    assert pause_sidecars & set(pause_pids) and beats_in_pause == 0, (pause_pids, pause_sidecars)


def test_a_sigkilled_runner_leaves_nothing_after_chaos_clean(tmp_path: Path) -> None:
    runner = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", "pg_lease", "--scenario",
                               "stop_past_deadline", "--backend", "docker", "--worker-image", "queue-chaos/python",
                               "--seed", "1", "--runs-dir", str(tmp_path)], cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    run_dir = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until a worker's container runs beside the server's
        dirs = [p for p in tmp_path.iterdir() if p.is_dir()]
        if dirs and any(engine.name_of(c).endswith("-w1-1") for c in engine.owned("containers", dirs[0].name)):
            run_dir = dirs[0]
            break
        time.sleep(0.2)
    assert run_dir is not None, "the run never started a worker's container"
    runner.send_signal(signal.SIGKILL)
    runner.wait(10)
    time.sleep(1)
    left = left_of(run_dir.name)
    assert any(name.startswith("container") and name.endswith("-postgres") for name in left), left
    assert any(name.startswith("volume") for name in left) and any(name.startswith("network") for name in left)
    cleaned = chaos("clean", "--runs-dir", str(tmp_path), runs_dir=tmp_path)
    assert cleaned.code == 0, cleaned.stdout + cleaned.stderr
    assert f"run {run_dir.name}: removed" in cleaned.stdout, cleaned.stdout
    assert left_of(run_dir.name) == []
    assert not run_processes(run_dir)


def test_an_image_the_engine_lacks_is_refused(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "--worker-image",
                   "queue-chaos/no-such-image:1", "--runs-dir", str(tmp_path))
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    assert "'queue-chaos/no-such-image:1' is not in the Docker engine" in result.stderr
