"""Process utilities below the runtime and the backends: ending processes for sure, and knowing it.

A killed process lives on for a moment while the kernel tears it down, and loses its command line
before it becomes a zombie; a check made right after the signal can see it neither gone nor
recognisable. Each process is followed by its psutil identity (pid and create time), so a recycled pid
never counts as the same process, and a zombie counts as dead: it holds no memory, ports or locks.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Iterable

import psutil

_PR_SET_PDEATHSIG = 1


def is_alive(process: psutil.Process) -> bool:
    """True while this very process exists and is not yet a zombie."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists and is not a zombie (one whose parent has not reaped it
    yet: a `chaos run` killed outright leaves its run's process to init, which may take seconds)."""
    try:
        return is_alive(psutil.Process(pid))
    except psutil.Error:
        return False


def wait_dead(processes: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to `timeout` seconds for every process to die; returns those still alive."""
    pending = [process for process in processes if is_alive(process)]
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        time.sleep(0.005)
        pending = [process for process in pending if is_alive(process)]
    return pending


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` asking the kernel to send `sig` to the child when its parent thread dies, so a
    controller killed outright (no `finally` runs) takes its workers and servers with it (Linux prctl).

    It runs after Popen has switched user, so it survives the drop to an unprivileged user.
    """

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return arm


def kill_group(pgid: int) -> list[psutil.Process]:
    """SIGKILL every process still in a process group (daemonized grandchildren keep their worker's)."""
    killed = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pgid:
                process.kill()
                killed.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied, PermissionError):
            continue
    return killed


def kill_tree(pid: int) -> list[psutil.Process]:
    """SIGKILL a process and every descendant, with no window for it to fork a new child meanwhile;
    returns the descendants (the root is the caller's to reap)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    try:
        # Stopped, it cannot fork or reap, so these pids stay its (zombie) children until it dies.
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    for victim in descendants:
        with contextlib.suppress(psutil.Error):
            victim.send_signal(signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    return descendants


def carrying(variable: str, values: set[str]) -> list[psutil.Process]:
    """Live processes (never the caller itself, nor a zombie) whose environment sets `variable` to one of
    `values`: a marker every process of one run's part inherits, however it detached."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if (proc.pid != os.getpid() and proc.info["status"] != psutil.STATUS_ZOMBIE
                    and proc.environ().get(variable) in values):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def is_stopped(process: psutil.Process) -> bool:
    """True once the kernel shows this process stopped (or traced-stopped), or it is gone: it runs no more."""
    try:
        return process.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return True


def wait_stopped(processes: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to `timeout` seconds for every process to show stopped; returns those still running."""
    pending = [process for process in processes if not is_stopped(process)]
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        time.sleep(0.001)
        pending = [process for process in pending if not is_stopped(process)]
    return pending
