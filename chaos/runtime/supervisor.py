"""Starts and signals the run's processes, and guarantees none outlives the run.

Each process gets its own session (so its group can be signalled as a whole), a log file in the run
dir, and a recorded identity (pid + create time): a signal is sent only while that identity still
holds, so a recycled pid is never hit. Exits are reaped into the ledger as they happen. Every process is
started from one long-lived thread (the parent-death signal is per thread), and carries the run's
containment (`chaos.containment`), which finds its descendants however they detach.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from chaos import events
from chaos.containers.workers import (
    WorkerContainers,
    container_env,
    host_pid,
    kill_container,
    set_paused,
    worker_process,
)
from chaos.containers.workers import remove as remove_container
from chaos.containment import SWEEP_S, RunCgroup, enter_cgroup, new_marker, sweep
from chaos.errors import ConfigError, HarnessError
from chaos.faults.base import Scope
from chaos.ledger import Ledger
from chaos.procs import die_with_parent, kill_group, wait_dead, wait_stopped
from chaos.runtime.spawner import Spawner

STOP_BOUND_S = 10.0  # how long a SIGSTOPped process may take to show stopped before the stop is a harness error


@dataclass
class Managed:
    """A process the supervisor started, with the identity recorded at start."""

    name: str
    role: str
    popen: subprocess.Popen[bytes]
    identity: psutil.Process
    log: Path
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None
    containers: WorkerContainers | None = None  # how it was started in a container, where it was
    container: str | None = None  # the container it runs in
    stopped: bool = False
    paused: bool = False  # its container is frozen
    ending: bool = False  # the suite sent it SIGTERM or SIGKILL: its exit is expected
    forced: bool = False  # it outlived the shutdown grace and was SIGKILLed
    reaper: threading.Thread | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        """The worker's own process: the one started, or in a container the one `docker run` started there."""
        return self.identity.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None


class Supervisor:
    """Owns every process of a run; `close()` leaves none running or stopped."""

    def __init__(self, ledger: Ledger, log_dir: Path, grace_s: float = 3.0) -> None:
        self.ledger = ledger
        self.log_dir = log_dir
        self.grace_s = grace_s  # how long SIGTERMed processes get to shut down before SIGKILL
        self.grace_ends_by: float | None = None  # time.monotonic() past which no grace is given (the run's deadline)
        self.processes: dict[str, Managed] = {}
        self._lock = threading.Lock()
        self.marker = new_marker()
        self.cgroup = RunCgroup.create(self.marker)
        try:
            ledger.append(events.containment(self.marker, str(self.cgroup.path) if self.cgroup else None))
        except BaseException:  # a ledger that cannot take it (a full disk): no cgroup of ours is left unjournaled
            if self.cgroup:
                self.cgroup.remove()
            raise
        self._spawner = Spawner()
        self._host_pids: dict[tuple[str, int], int] = {}  # (container, pid in it) -> host pid

    def start(self, name: str, argv: list[str], env: dict[str, str], role: str = "worker",
              cwd: Path | None = None, containers: WorkerContainers | None = None, stdio: bool = False) -> Managed:
        """Start a process; with `stdio`, its stdin and stdout are pipes (a control process's channel, whose
        stderr alone goes to the log), else stdin is /dev/null and both outputs go to the log."""
        if name in self.processes and self.processes[name].alive:
            raise HarnessError(f"process {name} is already running")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        # A signal handler that raises (the run's deadline) must not strike between the process's start
        # and its registration here, or the process would be nobody's to stop: hold SIGALRM until then.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            return self._spawner.call(lambda: self._start(name, argv, env, role, cwd, log, containers, stdio))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def _start(self, name: str, argv: list[str], env: dict[str, str], role: str, cwd: Path | None,
               log: Path, containers: WorkerContainers | None, stdio: bool) -> Managed:
        env = {**env, events.ENV_RUN_MARKER: self.marker}
        container, command = None, argv
        if containers is not None:
            container, command = containers.command(name, argv, container_env(env, (events.ENV_RUN_MARKER,)), cwd)
        try:
            with open(log, "ab") as out:
                popen = subprocess.Popen(command, env=env, cwd=cwd,
                                         stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
                                         stdout=subprocess.PIPE if stdio else out,
                                         stderr=out if stdio else subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_child_setup(
                                             die_with_parent(), self.cgroup.entry() if self.cgroup else None))
        except FileNotFoundError as exc:
            raise ConfigError(
                f"Cannot start {role} {name}: the program {argv[0]!r} was not found. Expected an executable "
                "on PATH or an absolute path in the target's worker command; install it or fix target.toml."
            ) from exc
        identity = psutil.Process(popen.pid)  # unreaped, so it exists even if it already exited
        if container is not None:
            identity = worker_process(container, identity) or identity
        managed = Managed(name, role, popen, identity, log, argv, env, cwd, containers, container)
        self.ledger.append(events.process_start(name, identity.pid, role, argv, identity.create_time(),
                                                container=container))
        managed.reaper = threading.Thread(target=self._reap, args=(managed,), name=f"reap-{name}", daemon=True)
        with self._lock:
            self.processes[name] = managed
        managed.reaper.start()
        return managed

    def _reap(self, managed: Managed) -> None:
        code = managed.popen.wait()
        if managed.container is not None and code > 128:  # the container's init reports a signal as 128 + it
            code = 128 - code
        ended_by = signal.Signals(-code).name if code < 0 else None
        tail = None if managed.ending else log_tail(managed.log)
        self.ledger.append(events.process_exit(managed.name, managed.pid, managed.role, code, ended_by,
                                               expected=managed.ending, forced=managed.forced, log=str(managed.log),
                                               log_tail=tail))

    def _members(self, managed: Managed, scope: Scope, pid: int | None = None) -> list[psutil.Process]:
        """The live processes a signal should reach; the root only while its identity still holds (a
        sender: the process of its tree whose pid sent the probe)."""
        if not managed.alive or managed.identity.pid != managed.pid:
            return []
        members = [managed.identity]
        if scope != "process":
            try:
                members += managed.identity.children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        if scope == "sender":
            return [proc for proc in members if proc.pid == pid]
        return members

    def signal(self, name: str, sig: signal.Signals, scope: Scope = "tree", pid: int | None = None) -> list[int]:
        """Send `sig` to a process (or its tree, or the process `pid` of its tree); returns the pids that
        received it. SIGKILL of a sender that is not the worker's own process waits for it to die and
        journals its exit: the worker's parent, not the suite, reaps it."""
        managed = self.processes[name]
        members = self._members(managed, scope, pid)
        if sig in (signal.SIGTERM, signal.SIGKILL) and (scope != "sender" or managed.identity in members):
            managed.ending = True
        hit: list[int] = []
        for proc in members:
            try:
                proc.send_signal(sig)  # psutil refuses if the pid was recycled
                hit.append(proc.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if sig == signal.SIGSTOP and hit:
            managed.stopped = True
            self._wait_stopped(managed, scope, hit)
        elif sig in (signal.SIGCONT, signal.SIGKILL):
            managed.stopped = False
        if sig == signal.SIGKILL and scope == "sender":
            self._journal_child_deaths(managed, [p for p in members if p.pid in hit and p.pid != managed.pid])
        return hit

    def _journal_child_deaths(self, managed: Managed, children: list[psutil.Process]) -> None:
        """A SIGKILLed descendant is dead once psutil, by its identity, no longer finds it alive (its parent
        may reap it at any time, or never); its exit is then journaled as the signal's."""
        if wait_dead(children, STOP_BOUND_S):
            raise HarnessError(f"{managed.name}: processes {[proc.pid for proc in children]} were sent SIGKILL but "
                               f"were still alive {STOP_BOUND_S:g}s later")
        for child in children:
            self.ledger.append(events.process_exit(managed.name, child.pid, managed.role, -signal.SIGKILL,
                                                   signal.SIGKILL.name))

    def _wait_stopped(self, managed: Managed, scope: Scope, hit: list[int]) -> None:
        """A stop is applied once the kernel shows every process of the tree stopped, not when the signal
        is sent (a process stops only when next scheduled). A child forked just before the stop reached its
        parent is stopped too, and added to `hit`."""
        while True:
            still = wait_stopped([proc for proc in self._members(managed, scope) if proc.pid in hit], STOP_BOUND_S)
            if still:
                raise HarnessError(f"{managed.name}: processes {[proc.pid for proc in still]} were sent SIGSTOP but "
                                   f"did not show stopped within {STOP_BOUND_S:g}s")
            late = [proc for proc in self._members(managed, scope) if proc.pid not in hit]
            if not late:
                return
            for proc in late:
                try:
                    proc.send_signal(signal.SIGSTOP)
                except psutil.Error:
                    continue
                hit.append(proc.pid)

    def pause(self, name: str, paused: bool) -> list[int]:
        """Freeze (or thaw) every process of a worker's container at once, through the cgroup freezer; the
        host pids of its processes."""
        managed = self._in_container(name)
        if not managed.alive:
            return []
        pids = set_paused(managed.container or "", paused)
        managed.paused = paused
        return pids

    def kill_container(self, name: str) -> list[int]:
        """SIGKILL a worker's container (its init, so every process in it dies); the host pids it had."""
        managed = self._in_container(name)
        if not managed.alive:
            return []
        managed.ending = True
        pids = kill_container(managed.container or "")
        managed.paused = False
        return pids

    def host_pid(self, worker: str | None, pid: Any) -> Any:
        """A probe's pid as the host sees it: a worker in a container reports its pid in the container's
        namespace, which neither signals nor the ledger's process records use. Found once per process and
        kept, so a probe that arrives after its process died still names it."""
        managed = self.processes.get(worker or "")
        if managed is None or managed.container is None or not isinstance(pid, int):
            return pid
        key = (managed.container, pid)
        if key not in self._host_pids:
            found = host_pid(managed.identity, pid)
            if found is None:
                return pid
            self._host_pids[key] = found
        return self._host_pids[key]

    def _in_container(self, name: str) -> Managed:
        managed = self.processes[name]
        if managed.container is None:
            raise ConfigError(f"{name} does not run in a container, so a container fault cannot reach it. Give the "
                              "target an image (image = \"queue-chaos/python\" in target.toml, or --worker-image), or "
                              "use the signal faults (stop, kill).")
        return managed

    def all_exited(self, role: str) -> bool:
        """Whether processes of this role were started and none is alive any more."""
        with self._lock:
            started = [m for m in self.processes.values() if m.role == role]
        return bool(started) and not any(m.alive for m in started)

    def nothing_works(self) -> bool:
        """Whether workers were started and no process that could still move a job is alive: every worker
        has exited and so has the reconciler (which may dead-letter a job on its own)."""
        with self._lock:
            reconcilers = [m for m in self.processes.values() if m.role != "worker"]
        return self.all_exited("worker") and not any(m.alive for m in reconcilers)

    def kill(self, name: str, scope: Scope = "tree") -> list[int]:
        return self.signal(name, signal.SIGKILL, scope)

    def wait_exit(self, name: str, timeout: float) -> int | None:
        """Wait until the process is reaped into the ledger; returns its return code."""
        managed = self.processes[name]
        assert managed.reaper is not None
        managed.reaper.join(timeout)
        return managed.popen.returncode if not managed.reaper.is_alive() else None

    def reap(self, name: str, pids: list[int] | None = None) -> None:
        """Wait until a killed process's exit is in the ledger (where `pids` are given, only if they hold
        the process itself: a killed descendant's exit was journaled when it died); a process SIGKILL
        cannot end is a harness error."""
        if pids is not None and self.processes[name].pid not in pids:
            return
        if self.wait_exit(name, 10.0) is None:
            raise HarnessError(f"process {name} (pid {self.processes[name].pid}) was sent SIGKILL but was not "
                               "reaped within 10s")

    def restart(self, name: str) -> tuple[list[int], Managed]:
        """SIGKILL a process's tree, reap it, and start it again with the same command and name."""
        old = self.processes[name]
        pids = self.kill(name)
        self.reap(name)
        return pids, self.start(name, old.argv, old.env, old.role, old.cwd, old.containers)

    def close(self) -> None:
        """Resume anything stopped, terminate everything, give it the grace to shut down, SIGKILL what is
        left (its exit says `forced`) and whatever the workers started that left their tree, and reap it
        all: nothing is left behind. Then the spawner thread ends."""
        self._spawner.fence()  # a start under way is registered before anything is stopped
        with self._lock:
            running = [m for m in self.processes.values() if m.alive]
        for managed in running:
            if managed.paused:
                self.pause(managed.name, False)
            if managed.stopped:
                self.signal(managed.name, signal.SIGCONT)
            self.signal(managed.name, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        if self.grace_ends_by is not None:  # a grace longer than the run has left is not waited out
            deadline = min(deadline, self.grace_ends_by)
        for managed in running:
            if self.wait_exit(managed.name, max(0.0, deadline - time.monotonic())) is None:
                managed.forced = True
                self.kill(managed.name)
                self.wait_exit(managed.name, 5.0)
        leftovers = [proc for managed in running for proc in kill_group(managed.popen.pid)]
        for container in [managed.container for managed in self.processes.values() if managed.container]:
            remove_container(container)
        try:
            _, escaped = sweep(self.marker, str(self.cgroup.path) if self.cgroup else None, SWEEP_S)
            if still := wait_dead(leftovers, 5.0) + escaped:
                raise HarnessError(f"processes {[proc.pid for proc in still]} survived SIGKILL at the end of the run")
        finally:
            self._spawner.close()


def _child_setup(die: Callable[[], None], cgroup: tuple[str, bytes] | None) -> Callable[[], None]:
    """In the child before exec: SIGALRM unblocked again (a signal mask survives exec, and queue libraries
    time jobs out with SIGALRM), inside the run's cgroup, and the parent-death signal armed."""

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
        enter_cgroup(cgroup)
        die()

    return setup


LOG_TAIL_LINES = 15


def log_tail(log: Path) -> list[str]:
    """The last lines of a process's log: why a worker that exited on its own did so."""
    try:
        with open(log, "rb") as file:
            file.seek(max(0, file.seek(0, 2) - 8192))
            lines = file.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [line[:300] for line in lines[-LOG_TAIL_LINES:]]
