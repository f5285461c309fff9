"""Ctrl-C in the middle of a fault: the run stops, and nothing it started is left running or stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chaos.errors import ChaosError
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import REPO


def wait_for_event(run_dir_parent: Path, kind: str, timeout: float = 60) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run_dir in run_dir_parent.glob("*"):
            ledger = run_dir / "ledger.sqlite"
            try:
                if any(e.kind == kind for e in read_events(ledger)):
                    return run_dir
            except ChaosError:  # not created yet
                continue
        time.sleep(0.02)
    raise AssertionError(f"no {kind} event within {timeout}s")


def run_pid(run_dir: Path) -> int:
    """The pid of the run's own process, which its ledger records: the child `chaos run` forks to run the
    scenario (the process a test starts only waits for it, and owns the exit code)."""
    start = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "run.start")
    return int(start.data["pid"])


def wait_gone(run_dir: Path, timeout: float = 15) -> None:
    """Give the kernel's parent-death signals time to end what a killed runner started."""
    deadline = time.monotonic() + timeout
    while run_processes(run_dir) and time.monotonic() < deadline:
        time.sleep(0.1)


@contextmanager
def stopped_worker_run(tmp_path: Path, target: str = "pg_naive") -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A run of stop_past_deadline, handed over once a worker is stopped: pg_naive never takes a job from a
    stopped owner, so the stop lasts its full length, time enough to interrupt the run."""
    proc = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", target, "--scenario",
                             "stop_past_deadline", "--seed", "1", "--runs-dir", str(tmp_path)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc, wait_for_event(tmp_path, "fault.applied")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_while_a_worker_is_stopped_leaves_nothing_behind(tmp_path: Path) -> None:
    with stopped_worker_run(tmp_path) as (proc, run_dir):
        events = read_events(run_dir / "ledger.sqlite")
        stopped = next(e for e in events if e.kind == "fault" and e.data["kind"] == "stop")
        assert not any(e.kind == "fault.healed" for e in events), "interrupt must land while the worker is stopped"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not run_processes(run_dir), "no worker, server or stopped process may outlive the run"
    events = read_events(run_dir / "ledger.sqlite")
    healed = [e for e in events if e.kind == "fault.healed" and e.data["id"] == stopped.data["id"]]
    assert healed and healed[0].data["pids"], "the stopped worker was resumed (SIGCONT) before it was ended"
    assert events[-1].kind == "run.end" and events[-1].data["status"] == "interrupted"


def test_controller_killed_outright_takes_its_workers_and_server_with_it(tmp_path: Path) -> None:
    """SIGKILL of the runner runs no `finally`: the kernel's parent-death signal must end what it started,
    and the ledger it left must still be readable (the verdict: inconclusive, nothing proven)."""
    with stopped_worker_run(tmp_path) as (proc, run_dir):
        assert run_processes(run_dir), "the run's workers and server are up"
        proc.kill()
        proc.wait(10)
    wait_gone(run_dir)
    assert not run_processes(run_dir), "a stopped worker, a running worker or the server outlived the runner"
    report = subprocess.run([sys.executable, "-m", "chaos", "report", str(run_dir)], cwd=REPO,
                            capture_output=True, text=True, check=False)
    assert report.returncode == 4 and "INCONCLUSIVE" in report.stdout, report.stdout + report.stderr
    pgdata = Path(next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start").data["pgdata"])
    assert pgdata.is_dir(), "a runner killed outright leaves its server's data behind"
    clean = subprocess.run([sys.executable, "-m", "chaos", "clean", "--runs-dir", str(tmp_path)], cwd=REPO,
                           capture_output=True, text=True, check=False)
    assert clean.returncode == 0 and f"removed its PostgreSQL data directory {pgdata}" in clean.stdout, clean.stdout
    assert not pgdata.exists()
    assert read_events(run_dir / "ledger.sqlite")[-1].data["status"] == "abandoned"
    again = subprocess.run([sys.executable, "-m", "chaos", "clean", "--runs-dir", str(tmp_path)], cwd=REPO,
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "nothing to clean" in again.stdout, "a killed run is cleaned once"


def test_three_quick_ctrl_cs_still_end_as_interrupted_and_clean(tmp_path: Path) -> None:
    with stopped_worker_run(tmp_path) as (proc, run_dir):
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.02)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "could not delete" not in stderr
    assert not run_processes(run_dir)
    started = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start")
    assert not Path(started.data["pgdata"]).exists(), "the server's data directory was removed"


@pytest.mark.parametrize("target", ["redis_reliable", "beanstalkd_ttr", "rabbitmq_ack"])
def test_ctrl_c_leaves_no_server_of_any_kind_behind(tmp_path: Path, target: str) -> None:
    """The other backend kinds' local servers (RabbitMQ's node with the epmd it forks) end with the run."""
    with stopped_worker_run(tmp_path, target) as (proc, run_dir):
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not run_processes(run_dir), "no worker, server or stopped process may outlive the run"
    started = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start")
    assert started.data["marker"] and not Path(started.data["data_dir"]).exists()


def test_runner_killed_outright_takes_a_rabbitmq_node_and_its_epmd_with_it(tmp_path: Path) -> None:
    """The node is the process the runner started (the script execs the VM) and its epmd a child of the
    runner's, so the kernel's parent-death signal ends both; `chaos clean` then removes the node's data."""
    with stopped_worker_run(tmp_path, "rabbitmq_ack") as (proc, run_dir):
        assert {p.name() for p in run_processes(run_dir)} >= {"beam.smp", "epmd"}
        proc.kill()
        proc.wait(10)
    wait_gone(run_dir)
    assert not run_processes(run_dir), "the node, its epmd or a worker outlived the runner"
    started = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start")
    data_dir = Path(started.data["data_dir"])
    clean = subprocess.run([sys.executable, "-m", "chaos", "clean", "--runs-dir", str(tmp_path)], cwd=REPO,
                           capture_output=True, text=True, check=False)
    assert clean.returncode == 0 and f"removed its RabbitMQ data directory {data_dir}" in clean.stdout, clean.stdout
    assert not data_dir.exists()
