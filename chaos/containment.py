"""Keeps every process a run's workers start findable and killable, whatever they do: a wrapper shell
that outlives its worker, a double fork, a `setsid()`. A process group or a parent-death signal reaches
none of those; two things do:

- an environment marker (one per run) every worker gets and every descendant inherits: /proc still
  shows it after a double fork and a new session, so a later `chaos clean` finds them by it;
- a cgroup v2 per run, where the machine lets this process create one and move children into it: a
  child cannot leave it, and `cgroup.kill` (Linux 5.14+) ends all of it at once.

The marker always, the cgroup where it can be had; both are journaled before the first worker starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import time
from pathlib import Path

import psutil

from chaos import events
from chaos.procs import carrying, is_alive

CGROUP_PREFIX = "chaos-run-"
SWEEP_POLL_S = 0.01
SWEEP_S = 5.0  # how long killing a run's leftover worker processes may take (at a run's end, or by `chaos clean`)
REMOVE_S = 2.0  # how long an emptied cgroup may take to let its directory go


def new_marker() -> str:
    return secrets.token_hex(8)


def is_run_marker(value: str) -> bool:
    """Of the form `new_marker` makes: a ledger naming any other value (a guessable word, an empty one)
    finds nothing by it."""
    return re.fullmatch(r"[0-9a-f]{16}", value) is not None


class RunCgroup:
    """A cgroup v2 directory that holds a run's workers and everything they start."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, marker: str) -> RunCgroup | None:
        """A child of this process's own cgroup v2, or None where there is no writable cgroup2 hierarchy."""
        root = cgroup2_mount()
        own = own_cgroup()
        if root is None or own is None:
            return None
        path = root / own.lstrip("/") / f"{CGROUP_PREFIX}{marker}"
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path)

    def entry(self) -> tuple[str, bytes]:
        """What a child writes, before exec, to move itself in ("0": the writer)."""
        return str(self.path / "cgroup.procs"), b"0"

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL every process in it: at once through `cgroup.kill`, else one by one."""
        try:
            (self.path / "cgroup.kill").write_text("1")
            return
        except OSError:
            pass
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the (emptied) directory; False while a process is still in it."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def enter_cgroup(entry: tuple[str, bytes] | None) -> None:
    """In a child before exec: move into the run's cgroup. A refusal (a cgroup made unusable meanwhile) only
    leaves the child to the marker, so it is ignored."""
    if entry is None:
        return
    try:
        fd = os.open(entry[0], os.O_WRONLY)
        try:
            os.write(fd, entry[1])
        finally:
            os.close(fd)
    except OSError:
        pass


def cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def own_cgroup() -> str | None:
    """This process's cgroup v2 path (the `0::` line of /proc/self/cgroup)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    return next((line[3:] for line in lines if line.startswith("0::")), None)


def marked(marker: str) -> list[psutil.Process]:
    """Live processes whose environment carries this run's marker (never the caller itself)."""
    return carrying(events.ENV_RUN_MARKER, {marker})


def _recorded(marker: str, cgroup: str | None) -> RunCgroup | None:
    """The run's cgroup as a ledger records it, only if it is one this module made for that marker: a
    damaged ledger must not point `cgroup.kill` at someone else's cgroup."""
    if not cgroup or not is_run_marker(marker) or Path(cgroup).name != f"{CGROUP_PREFIX}{marker}":
        return None
    return RunCgroup(Path(cgroup))


def members(marker: str, cgroup: str | None) -> list[psutil.Process]:
    """Every live process of a run's workers: those its cgroup holds and those carrying its marker (none
    for a marker not of the run's form)."""
    if not is_run_marker(marker):
        return []
    found = {proc.pid: proc for proc in marked(marker)}
    run_cgroup = _recorded(marker, cgroup)
    for pid in run_cgroup.pids() if run_cgroup else []:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if is_alive(proc):
                found.setdefault(pid, proc)
    return list(found.values())


def sweep(marker: str, cgroup: str | None, timeout: float) -> tuple[list[int], list[psutil.Process]]:
    """SIGKILL every process of a run's workers until none is left (one forking meanwhile is found again by
    its children's marker or cgroup); returns the pids killed and what still lives after `timeout`."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    run_cgroup = _recorded(marker, cgroup)
    while True:
        left = members(marker, cgroup)
        if run_cgroup:
            run_cgroup.kill()
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
                killed.add(proc.pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(SWEEP_POLL_S)
    still = members(marker, cgroup)
    if run_cgroup and not still:
        _remove_when_empty(run_cgroup, max(deadline, time.monotonic() + REMOVE_S))
    return sorted(killed), still


def _remove_when_empty(cgroup: RunCgroup, deadline: float) -> None:
    """A killed process leaves the cgroup once the kernel has torn it down: retry the rmdir a moment."""
    while not cgroup.remove() and time.monotonic() < deadline:
        time.sleep(SWEEP_POLL_S)
