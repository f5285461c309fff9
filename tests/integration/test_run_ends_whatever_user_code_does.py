"""The exit code is the verdict's, and the run ends by its deadline, whatever the user's code does: a
reader of stdout that goes away, a stdout that cannot be written, a bare `except:` that swallows every
alarm and the first Ctrl-C, a thread left running, a shutdown grace longer than the deadline, a library
that turns the deadline's alarm into its own error, an `os._exit` that ends the run's process at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.runtime.run import WATCHDOG_GRACE_S
from tests.integration.runner import REPO, chaos
from tests.integration.test_every_run_ends import assert_error_run, run, scenario, target
from tests.integration.test_interrupt import run_pid, wait_for_event, wait_gone

DEAF = """ctx.start_worker()
deaf = __file__ + ".deaf"
while True:
    try:
        open(deaf, "w").close()  # from here on every Ctrl-C is swallowed: the test waits for this file
        time.sleep(0.1)
    except:  # noqa: E722 - the point: it swallows the deadline's alarm and Ctrl-C
        pass"""


def deaf_scenario(tmp_path: Path) -> Path:
    path = scenario(tmp_path, DEAF, "deaf")
    path.write_text("import time\n" + path.read_text())
    return path


def cli(*args: str) -> subprocess.Popen[str]:
    """The CLI with stdout on a pipe nobody reads: its read end is closed at once."""
    proc = subprocess.Popen([sys.executable, "-m", "chaos", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    proc.stdout.close()
    return proc


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    return proc.wait(timeout), stderr


def test_a_fail_is_exit_1_when_stdouts_reader_has_gone(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    code, stderr = finish(cli("run", "--target", "pg_naive", "--scenario", "kill_after_effect_before_ack",
                              "--seed", "1", "--runs-dir", str(runs)))
    assert code == 1, stderr
    assert "Traceback" not in stderr
    (run_dir,) = runs.iterdir()
    assert (run_dir / "verdict.json").is_file()
    code, stderr = finish(cli("report", str(run_dir)))
    assert code == 1, stderr
    code, stderr = finish(cli("list"))
    assert code == 0, stderr
    code, stderr = finish(cli("clean", "--runs-dir", str(runs)))
    assert code == 0, stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(("target_name", "scenario_name", "verdict", "code"), [
    ("pg_lease", "no_faults", "pass", 2), ("pg_naive", "kill_after_effect_before_ack", "fail", 1)])
def test_a_stdout_that_cannot_be_written_is_said_and_a_pass_is_no_success(
        tmp_path: Path, target_name: str, scenario_name: str, verdict: str, code: int) -> None:
    runs = tmp_path / "runs"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "chaos", "run", "--target", target_name, "--scenario",
                               scenario_name, "--seed", "1", "--runs-dir", str(runs)], cwd=REPO, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=180, check=False)
    assert done.returncode == code, done.stderr
    assert "chaos: cannot write to standard output (No space left on device)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "a bug in queue-chaos" not in done.stderr
    (run_dir,) = runs.iterdir()
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == verdict
    assert not run_processes(run_dir)
    with open("/dev/full", "w") as full:
        listed = subprocess.run([sys.executable, "-m", "chaos", "list"], cwd=REPO, stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert listed.returncode == 2 and "cannot write to standard output" in listed.stderr, listed.stderr


@pytest.mark.parametrize("code", [0, 1])
def test_os_exit_in_a_scenario_is_a_harness_error_never_its_own_code(tmp_path: Path, code: int) -> None:
    """The jobs are done and the run would pass; the scenario's os._exit ends its process before the
    verdict, running no `finally`. The command's code is still no 0 (nor a 1, a fail without a verdict)."""
    exits = scenario(tmp_path, f"import os\nctx.start_worker()\nctx.wait_drained(10)\nos._exit({code})")
    result = run(tmp_path, "pg_lease", exits)
    assert_error_run(result, f"The run's process exited with code {code} before it wrote a verdict",
                     "os._exit", "removed its PostgreSQL data directory")
    started = next(e for e in read_events(result.dir / "ledger.sqlite") if e.kind == "backend.start")
    assert not Path(started.data["pgdata"]).exists(), "the server's data directory was removed"


def test_os_exit_in_the_targets_control_is_a_harness_error(tmp_path: Path) -> None:
    path = target(tmp_path)
    (path / "control.py").write_text((path / "control.py").read_text()
                                     + "\n    def setup(self) -> None:\n        import os\n        os._exit(0)\n")
    assert_error_run(run(tmp_path, path, "no_faults"), "exited with code 0 before it wrote a verdict")


def test_os_exit_as_the_scenario_is_imported_is_exit_3(tmp_path: Path) -> None:
    at_import = tmp_path / "exits_at_import.py"
    at_import.write_text('"""Exits as it is imported."""\n\nimport os\n\nos._exit(0)\n')
    result = run(tmp_path, "pg_lease", at_import)
    assert result.code == 3, result.stdout + result.stderr
    assert "exited with code 0 before it wrote a verdict" in result.stderr, result.stderr
    assert "before it made its run dir" in result.stderr
    assert result.run_dir is None


def test_a_run_whose_process_is_killed_outright_is_exit_3_and_cleaned_up(tmp_path: Path) -> None:
    """The OOM killer, or anyone's SIGKILL, takes the run's process (the `chaos run` the user started
    only waits for it): its parent says so, removes what it left, and writes an `error` verdict."""
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", "pg_naive", "--scenario",
                             "stop_past_deadline", "--seed", "1", "--runs-dir", str(runs)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_dir = wait_for_event(runs, "fault.applied")
        assert run_pid(run_dir) != proc.pid, "the run's process is not the one the user started"
        os.kill(run_pid(run_dir), signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, stdout + stderr
    assert "The run's process was killed by SIGKILL before it wrote a verdict" in stderr, stderr
    assert stdout.startswith("ERROR") and "Traceback" not in stderr
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "error"
    wait_gone(run_dir)
    assert not run_processes(run_dir), "a worker, stopped or not, or the server outlived the run"
    started = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start")
    assert not Path(started.data["pgdata"]).exists(), "the server's data directory was removed"


def test_a_thread_the_scenario_leaves_running_does_not_hold_the_verdict(tmp_path: Path) -> None:
    body = ("import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=False).start()\n"
            "ctx.start_worker()\nctx.wait_drained(10)")
    began = time.monotonic()
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario(tmp_path, body)), "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"), timeout=90)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS")
    assert time.monotonic() - began < 60


@pytest.mark.full  # slow: the full tier keeps the README's test command within minutes
def test_a_bare_except_cannot_keep_a_run_past_its_deadline(tmp_path: Path) -> None:
    # The deadline must outlast the run's setup and its first worker's start, or its alarm lands before the
    # scenario's bare except can swallow it (a CI machine under load took over 3 s to get there).
    deadline = 8
    began = time.monotonic()
    result = run(tmp_path, "pg_lease", deaf_scenario(tmp_path), "--deadline", str(deadline))
    took = time.monotonic() - began
    assert result.code == 3, result.stdout + result.stderr
    assert Path(f"{tmp_path / 'deaf.py'}.deaf").exists(), "the scenario reached its deaf loop"
    assert deadline + WATCHDOG_GRACE_S <= took < deadline + WATCHDOG_GRACE_S + 20, took
    assert "caught the deadline's alarm" in result.stderr and "Traceback" not in result.stderr
    end = read_events(result.dir / "ledger.sqlite")[-1]
    assert end.kind == "run.end" and end.data["status"] == "error"
    assert '"verdict": "error"' in (result.dir / "verdict.json").read_text()
    assert not run_processes(result.dir)


def test_a_second_ctrl_c_ends_a_run_whose_scenario_swallowed_the_first(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", "pg_lease", "--scenario",
                             str(deaf_scenario(tmp_path)), "--seed", "1", "--runs-dir", str(runs)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_dir = wait_for_event(runs, "process.start")
        deaf = Path(f"{tmp_path / 'deaf.py'}.deaf")
        while not deaf.exists():  # the scenario is in its deaf loop, not still starting its worker
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None, "the scenario swallowed the first Ctrl-C (else this test proves nothing)"
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert time.monotonic() - began < 30
    assert "interrupted again" in stderr and "Traceback" not in stderr
    assert not run_processes(run_dir)
    assert read_events(run_dir / "ledger.sqlite")[-1].data["status"] == "interrupted"
    started = next(e for e in read_events(run_dir / "ledger.sqlite") if e.kind == "backend.start")
    assert not Path(started.data["pgdata"]).exists(), "the server's data directory was removed"


def test_a_shutdown_grace_longer_than_the_deadline_is_not_waited_out(tmp_path: Path) -> None:
    stubborn = ('["{python}", "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                'time.sleep(3600)"]')
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.wait_drained(0.5)")
    began = time.monotonic()
    result = run(tmp_path, target(tmp_path, worker=stubborn, shutdown_grace_s="600"), quick, "--deadline", "6")
    assert time.monotonic() - began < 6 + 10
    verdict = assert_error_run(result)
    assert any("did not stop within the shutdown grace of 600" in note for note in verdict["notes"])
    assert not [p for p in psutil.Process().children(recursive=True) if "sleep(3600)" in " ".join(p.cmdline())]


def test_a_deadline_a_library_swallowed_is_still_no_pass(tmp_path: Path) -> None:
    """rabbitmq_ack's control connects with pika while the broker boots: the alarm lands in the connect
    and comes out as a connection error that is retried. The run must not go on to a PASS."""
    result = run(tmp_path, "rabbitmq_ack", "no_faults", "--deadline", "3")
    assert_error_run(result, "passed its deadline of 3s")
