"""Stopping a PostgreSQL server for sure: signal, wait without reaping, then sweep up every process of it.

A server is many processes that do not share the postmaster's process group, so a stop is only done
once the postmaster is reaped and no process recognised as this server's is left alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psutil

from chaos.errors import HarnessError
from chaos.procs import is_alive, kill_tree

STOP_GRACE_S = 5.0
# Each step: a signal for the postmaster, then how long it gets to exit before the next step.
StopSteps = Sequence[tuple[signal.Signals, float]]
CLOSE_STOP: StopSteps = ((signal.SIGINT, STOP_GRACE_S), (signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S))
ABORT_STOP: StopSteps = ((signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S))
KILL_STOP: StopSteps = ((signal.SIGKILL, STOP_GRACE_S),)
RESTART_STOP: dict[str, StopSteps] = {
    "immediate": ((signal.SIGQUIT, 10.0), (signal.SIGKILL, STOP_GRACE_S)),
    "fast": ((signal.SIGINT, 30.0), (signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)),
}


@dataclass(frozen=True)
class ServerIdentity:
    """How to recognise every process of one server, even orphans after the postmaster died.

    PostgreSQL children call setsid(), so they are NOT in the postmaster's process group and a killpg
    misses them; they retitle themselves 'postgres: <cluster_name>: ...' (unique per instance) and a
    just-forked one still shows the postmaster's command line with '-D <pgdata>'.
    """

    postgres: str
    pgdata: str
    cluster_name: str

    def matches(self, cmdline: list[str]) -> bool:
        if " ".join(cmdline).startswith(f"postgres: {self.cluster_name}:"):
            return True
        return bool(cmdline) and cmdline[0] == self.postgres and self.pgdata in cmdline[1:] and "-D" in cmdline


def exited(proc: subprocess.Popen[bytes]) -> bool:
    """True once the process exited, WITHOUT reaping it: while it is a zombie its pid cannot be reused."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        # Someone else reaped it, so its pid may already be reused: mark it done (as Popen.wait would)
        # so that nothing signals that pid any more.
        proc.returncode = 0
        return True


def stop(proc: subprocess.Popen[bytes], ident: ServerIdentity, steps: StopSteps) -> int:
    """Send each signal in turn until the postmaster exits; SIGKILL goes to it and all its descendants."""
    killed: list[psutil.Process] = []
    for sig, grace in steps:
        if exited(proc):
            break
        if sig == signal.SIGKILL:
            killed = kill_tree(proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
        if _wait_exited(proc, grace):
            break
    return reap_and_sweep(proc, ident, killed)


def reap_and_sweep(proc: subprocess.Popen[bytes], ident: ServerIdentity, killed: Sequence[psutil.Process] = (),
                   timeout: float = 5.0) -> int:
    """Reap the exited postmaster, SIGKILL any process of this server still alive (orphans), and wait
    until every process killed is dead.

    A SIGKILLed process lives on for a moment while the kernel tears it down, and by then it has lost
    its command line, so the identity sweep alone would stop seeing it before it is dead: each process
    signalled is therefore also waited on by its own (pid, create time) identity.
    """
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"PostgreSQL postmaster {proc.pid} did not exit even after SIGKILL") from exc
    pending = list(killed)
    deadline = time.monotonic() + timeout
    while True:
        survivors = live_processes(ident)
        for process in survivors:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGKILL)
        pending = [process for process in [*pending, *survivors] if is_alive(process)]
        if not pending:
            return returncode
        if time.monotonic() >= deadline:
            pids = sorted({process.pid for process in pending})
            raise HarnessError(f"PostgreSQL processes {pids} of {ident.pgdata} survived SIGKILL")
        time.sleep(0.01)


def _wait_exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    delay = 0.002
    while not exited(proc):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def live_processes(ident: ServerIdentity) -> list[psutil.Process]:
    """Live processes of this server; zombies are skipped (they hold no memory, ports or locks)."""
    found: list[psutil.Process] = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if ident.matches(list(process.info["cmdline"] or [])):
                found.append(process)
        except psutil.Error:
            continue
    return found
