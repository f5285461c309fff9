"""Waiting until SIGKILLed processes are really dead, including ones that are not our children.

A killed process lives on for a moment while the kernel tears it down, and loses its command line
before it becomes a zombie; a check made right after the signal can see it neither gone nor
recognisable. Each process is followed by its psutil identity (pid and create time), so a recycled pid
never counts as the same process, and a zombie counts as dead: it holds no memory, ports or locks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import psutil


def is_alive(process: psutil.Process) -> bool:
    """True while this very process exists and is not yet a zombie."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
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
