"""The supervisor against real processes and real signals."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from chaos.errors import ConfigError, HarnessError
from chaos.ledger import Ledger
from chaos.procs import is_alive
from chaos.runtime.supervisor import Supervisor

# A parent that starts a child and then sleeps: a two-process tree, like a pool supervisor and its child.
# It writes to its log before it forks, so a test that has seen the child knows the line is in the log.
TREE = [sys.executable, "-c",
        "import subprocess, sys, time; print('tree up', flush=True);"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"]


def wait_children(sup: Supervisor, name: str, count: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = psutil.Process(sup.processes[name].pid).children(recursive=True)
        if len(children) >= count:
            return children
        time.sleep(0.02)
    raise AssertionError("child never started")


def status_becomes(processes: list[psutil.Process], status: str, timeout: float = 10) -> bool:
    """A signal takes effect when the process is next scheduled, which under load can take a while."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(process.status() == status for process in processes):
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def sup(ledger: Ledger, tmp_path: Path) -> Iterator[Supervisor]:
    supervisor = Supervisor(ledger, tmp_path / "logs")
    yield supervisor
    supervisor.close()


def test_kill_tree_reaches_every_process_and_the_exit_is_reaped(sup: Supervisor, ledger: Ledger,
                                                                 tmp_path: Path) -> None:
    managed = sup.start("w1", TREE, dict(os.environ))
    assert os.getpgid(managed.pid) == managed.pid, "each worker gets its own process group"
    (child,) = wait_children(sup, "w1", 1)
    pids = sup.kill("w1")
    assert set(pids) == {managed.pid, child.pid}
    assert sup.wait_exit("w1", 5) == -signal.SIGKILL
    child.wait(5)
    exits = [e for e in ledger.events() if e.kind == "process.exit"]
    assert exits[0].data["signal"] == "SIGKILL" and exits[0].worker == "w1"
    assert "tree up" in (tmp_path / "logs" / "w1.log").read_text()


def test_stop_and_cont_really_stop_the_tree(sup: Supervisor) -> None:
    managed = sup.start("w1", TREE, dict(os.environ))
    (child,) = wait_children(sup, "w1", 1)
    parent = psutil.Process(managed.pid)
    sup.signal("w1", signal.SIGSTOP)
    assert status_becomes([parent, child], psutil.STATUS_STOPPED)
    sup.signal("w1", signal.SIGCONT)
    assert status_becomes([parent, child], psutil.STATUS_SLEEPING)


def test_close_resumes_stopped_processes_and_leaves_nothing(sup: Supervisor) -> None:
    a = sup.start("w1", TREE, dict(os.environ))
    b = sup.start("w2", TREE, dict(os.environ))
    children = wait_children(sup, "w1", 1) + wait_children(sup, "w2", 1)
    sup.signal("w1", signal.SIGSTOP)
    sup.close()
    for pid in [a.pid, b.pid] + [c.pid for c in children]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_no_signal_after_the_process_is_gone(sup: Supervisor) -> None:
    sup.start("w1", [sys.executable, "-c", "pass"], dict(os.environ))
    assert sup.wait_exit("w1", 5) == 0
    assert sup.kill("w1") == [], "a reaped process's pid may be recycled: it must never be signalled"


def test_missing_program_is_a_config_error(sup: Supervisor) -> None:
    with pytest.raises(ConfigError, match="was not found"):
        sup.start("w1", ["/nonexistent/worker-binary"], dict(os.environ))


def test_a_process_started_from_a_thread_that_ended_lives_on(sup: Supervisor) -> None:
    """The parent-death signal is per thread: the supervisor starts every process from its own thread."""
    starter = threading.Thread(target=lambda: sup.start("w1", TREE, dict(os.environ)))
    starter.start()
    starter.join()
    wait_children(sup, "w1", 1)
    time.sleep(0.2)  # a parent-death SIGKILL lands at once
    assert sup.processes["w1"].alive, "the worker died with the thread that asked for it"


def test_close_kills_what_left_the_tree_and_the_group_and_nothing_starts_after(sup: Supervisor, tmp_path: Path) -> None:
    """A grandchild in a session of its own (no parent, no group of the worker's) ends with the run."""
    escape = [sys.executable, "-c", "import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n"
              "    if os.fork() == 0:\n        time.sleep(60)\n    os._exit(0)\nos.wait()\ntime.sleep(60)"]
    sup.start("w1", escape, dict(os.environ))
    deadline = time.monotonic() + 10
    escaped: list[psutil.Process] = []
    while not escaped and time.monotonic() < deadline:
        escaped = [p for p in psutil.process_iter() if _environ(p).get("CHAOS_RUN_MARKER") == sup.marker
                   and is_alive(p) and p.ppid() != sup.processes["w1"].pid and p.pid != sup.processes["w1"].pid]
        time.sleep(0.02)
    assert escaped, "the grandchild escaped the tree"
    assert os.getsid(escaped[0].pid) != os.getsid(sup.processes["w1"].pid), "and the session"
    sup.close()
    assert not is_alive(escaped[0])
    assert sup.cgroup is None or not sup.cgroup.path.exists(), "the run's cgroup is removed"
    with pytest.raises(HarnessError, match="after the run began stopping"):
        sup.start("w2", TREE, dict(os.environ))


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except psutil.Error:
        return {}
