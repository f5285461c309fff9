"""The local provider's shared half for servers the suite runs as itself (Redis, beanstalkd, RabbitMQ):
one process tree in the run dir, on free ports, that the nemesis may restart or kill and that no exit of
ours leaves behind.

Every process of a server is recognised by the run's random marker in its environment (children inherit
it, daemons too; Redis is told not to write its title over it): a stop is only done once none is left,
and a run whose runner was SIGKILLed can be cleaned from its ledger alone, for what proves it is that
run's (`chaos.ownership`): the processes carrying the marker, and the data directory whose parent holds
the owner file with it.
A subclass says how to start its server (`argv`), when it is ready, and what its clients' URL is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar, Self

import psutil

from chaos import events, ports
from chaos.backends.base import KILL, RESTART, Backend, BackendSettings, Endpoint
from chaos.backends.options import ServerOption
from chaos.errors import ConfigError, HarnessError
from chaos.ownership import is_marker, mark, new_marker, why_not_owned
from chaos.procs import die_with_parent, is_alive, kill_tree, wait_dead

HOST = ports.HOST  # where the ports were reserved (checked free)
MARKER = events.ENV_SERVER_MARKER  # in every server process's environment: whose it is
PORT_ATTEMPTS = 5
STOP_GRACE_S = 10.0
LOG_TAIL_LINES = 15
_IN_USE = ("in use", "eaddrinuse", "address already", "could not bind")
# Strong references: a server dropped without close() must still be stopped at exit (PostgreSQL's too).
LIVE: set[Backend] = set()


def require_binary(name: str, package: str, what: str) -> str:
    """The binary's path on PATH, or a one-paragraph error naming the Debian package that has it."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin")
    if found is None:
        raise ConfigError(f"The local {what} provider starts its own server with `{name}`, which is not on PATH. "
                          f"Install it (Debian: apt-get install {package}, or run ci/setup.sh), or point the run at "
                          f"a server of yours with --backend-url.")
    return found


def server_processes(marker: str) -> list[psutil.Process]:
    """Live processes of this server: exactly its marker in their environment (zombies hold nothing:
    skipped); none for a value not of the marker's form."""
    if not is_marker(marker):
        return []
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(MARKER) == marker:
                found.append(process)
        except psutil.Error:
            continue
    return found


def _close_live_servers() -> None:
    """Last resort on interpreter exit: never leave a server of ours running (SIGKILL of us excepted)."""
    for server in list(LIVE):
        with contextlib.suppress(Exception):
            server.close()


atexit.register(_close_live_servers)


class LocalServer(Backend):
    """A private server in data_root on free ports (provider 'local'), restartable on the same ports."""

    provider: ClassVar[str] = "local"
    capabilities: ClassVar[frozenset[str]] = frozenset({RESTART, KILL})
    name: ClassVar[str] = ""  # as a message names it: "Redis"
    ready_timeout_s: ClassVar[float] = 30.0
    restart_modes: ClassVar[dict[str, signal.Signals]] = {"immediate": signal.SIGKILL, "fast": signal.SIGTERM}
    close_signal: ClassVar[signal.Signals] = signal.SIGTERM  # how close() stops it, before deleting its data
    # The flag that makes its binary print its version and exit (backend.start records the first line for a
    # report's provenance), or None where asking would start a server (rabbitmq-server has no such flag).
    version_flag: ClassVar[str | None] = "--version"

    def __init__(self, settings: BackendSettings) -> None:
        self.data_root = Path(settings.data_root).absolute()
        self.data_dir = self.data_root / "data"
        self.log_path = self.data_root / "server.log"
        self.options = dict(settings.options)
        self.namespace = self.namespace_for(settings.run_id)
        self.marker = new_marker()
        self.ports: dict[str, int] = {}
        self._on_event = settings.on_event
        self._proc: subprocess.Popen[bytes] | None = None
        self._companions: list[subprocess.Popen[bytes]] = []
        self._started = False
        self._closed = False

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        return cls(settings).start()

    # -- what a server kind says ---------------------------------------------------------------------

    @staticmethod
    def namespace_for(run_id: str) -> str:
        """The run's own part of the server (the server is the run's own too, but its clients need a name)."""
        return ""

    def port_names(self) -> tuple[str, ...]:
        """The ports it listens on; the first is its clients'."""
        return ("client",)

    def argv(self) -> list[str]:
        """How to start it on self.ports, with its files in self.data_dir."""
        raise NotImplementedError

    def server_env(self) -> dict[str, str]:
        return {}

    def companions(self) -> list[list[str]]:
        """Processes the server needs beside it, started first as children of ours (so they die with the
        runner, where a daemon the server forked would not) and ended with it: RabbitMQ's epmd."""
        return []

    def companions_ready(self) -> bool:
        return True

    def version(self) -> str | None:
        """The first line its binary prints for `version_flag`, up to its first word with a digit (the
        version), or None when it cannot tell (quickly)."""
        if self.version_flag is None:
            return None
        try:
            done = subprocess.run([self.argv()[0], self.version_flag], capture_output=True, text=True, timeout=5,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        first = (done.stdout or done.stderr).strip().splitlines()
        if done.returncode != 0 or not first:
            return None
        words = first[0].split()  # "Redis server v=7.0.15 sha=... malloc=...": up to the version's word
        upto = next((i for i, word in enumerate(words) if any(c.isdigit() for c in word)), len(words) - 1)
        return " ".join(words[:upto + 1])[:120]

    def ready(self) -> bool:
        """True once it serves clients (after loading its data)."""
        raise NotImplementedError

    def url_at(self, host: str, port: int) -> str:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What backend.start records beyond pid, ports and directories (its settings)."""
        return {}

    def option(self, option: ServerOption) -> Any:
        """A server setting (target.toml's [server], or -p), its default when the run gives none; checked
        here too, for a caller that opens the server without a target."""
        return option.check(self.options.get(option.name, option.default), f"the local {self.name} server")

    # -- Backend -----------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if not self.ports:
            raise HarnessError(f"the local {self.name} server has not been started")
        return self.ports[self.port_names()[0]]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def endpoint(self) -> Endpoint:
        return self.endpoint_at(HOST, self.port)

    def endpoint_at(self, host: str, port: int) -> Endpoint:
        return Endpoint(host, port, self.url_at(host, port))

    def start(self) -> Self:
        if self._closed:
            raise HarnessError(f"local {self.name}: start() after close()")
        if self._started:
            return self
        if os.path.lexists(self.data_dir):
            raise ConfigError(f"Expected no {self.name} data directory at {self.data_dir} (each run creates its "
                              "own), but one exists, maybe from an earlier run. Use a fresh run directory.")
        began = time.monotonic()
        LIVE.add(self)
        try:
            # Marked, then journaled, before the data dir exists: a runner killed from here on leaves nothing
            # `chaos clean` cannot find and prove the run's (its data dir, and by the marker any process of it).
            mark(self.data_root, self.marker)
            self._emit(events.backend_prepare(provider=self.provider, data_dir=str(self.data_dir), marker=self.marker))
            self.data_dir.mkdir(parents=True)
            self._launch_retrying(fresh_ports=True)
            self._started = True
            self._emit(events.backend_start(pid=self.pid, port=self.port, ports=self.ports, provider=self.provider,
                                            start_s=round(time.monotonic() - began, 3), data_dir=str(self.data_dir),
                                            marker=self.marker, version=self.version(), **self.describe()))
        except BaseException:
            self._started = False
            LIVE.discard(self)
            self._teardown(emit=False)
            raise
        return self

    def restart(self, mode: str = "immediate") -> None:
        """Stop it (immediate: SIGKILL, a crash; fast: SIGTERM, a clean shutdown) and start it again on the
        same data and ports."""
        if mode not in self.restart_modes:
            raise ConfigError(f"Expected a {self.name} restart mode among {', '.join(self.restart_modes)}, but got "
                              f"{mode!r}. Fix the fault's mode in the scenario.")
        self._require_running()
        old_pid, began = self.pid, time.monotonic()
        self._stop(self.restart_modes[mode])
        self._launch_retrying(fresh_ports=False)
        self._emit(events.backend_restart(mode, old_pid, self.pid, time.monotonic() - began))

    def kill(self) -> None:
        """SIGKILL every process of the server, leaving it down until restart()."""
        self._require_running()
        pid = self.pid
        if pid is None:
            return
        returncode = self._stop(signal.SIGKILL)
        self._emit(events.backend_exit(pid, returncode, "kill"))

    def close(self) -> None:
        """Stop it (close_signal, then SIGKILL) and delete its data; idempotent."""
        if self._closed:
            return
        self._closed = True
        LIVE.discard(self)
        self._teardown(emit=self._started)

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """SIGKILL what still runs of that server and delete its data dir, once the data dir proves it is the
        run's (in the run dir, beside the owner file with the journaled marker); else report it, untouched."""
        marker, named = str(started.get("marker") or ""), str(started.get("data_dir") or "")
        if not named:
            return True, ""
        why = why_not_owned(named, run_dir, marker, "data")
        if why:
            if not os.path.lexists(named):
                return True, ""  # nothing there, and a process of it died with its runner (parent-death signal)
            return False, f"its {cls.name} data directory {named} is not touched: {why}"
        victims = server_processes(marker)
        for process in victims:
            with contextlib.suppress(psutil.Error):
                process.kill()
        if left := [p.pid for p in wait_dead(victims, 5.0)]:
            return False, f"its {cls.name} processes {left} survived SIGKILL; end them as root"
        if os.path.isdir(named):
            shutil.rmtree(named, ignore_errors=True)
            return True, f"removed its {cls.name} data directory {named}"
        return True, f"killed its {cls.name} processes {[p.pid for p in victims]}" if victims else ""

    # -- internals -------------------------------------------------------------------------------------

    def _emit(self, record: events.Record) -> None:
        if self._on_event is not None:
            self._on_event(record)

    def _require_running(self) -> None:
        if not self._started or self._closed:
            raise HarnessError(f"the local {self.name} server is not started (or already closed)")

    def _launch_retrying(self, fresh_ports: bool) -> None:
        """Launch, up to PORT_ATTEMPTS times while a port is taken: on new ports for a first start, on the
        same ones (pausing longer each time) for a restart, since its clients know those."""
        log = ""
        for attempt in range(PORT_ATTEMPTS):
            if fresh_ports:
                ports.release(*self.ports.values())
                self.ports = {name: ports.reserve() for name in self.port_names()}
            try:
                self._launch()
                return
            except _PortInUse as exc:
                log = exc.log
                time.sleep(0.2 * attempt)
        raise HarnessError(f"{self.name} could not bind its ports {self.ports} in {PORT_ATTEMPTS} attempts; "
                           f"{self.log_path} says:\n{log}")

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log_path, "ab") as log:
            try:
                return subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.data_dir,
                    env={**os.environ, **self.server_env(), MARKER: self.marker}, start_new_session=True,
                    preexec_fn=die_with_parent(signal.SIGKILL))
            except OSError as exc:
                raise HarnessError(f"could not start {argv[0]}: {exc}") from exc

    def _launch(self) -> None:
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        argv = self.argv()
        deadline = time.monotonic() + self.ready_timeout_s
        self._companions = [self._spawn(companion) for companion in self.companions()]
        while not self.companions_ready():
            if any(c.poll() is not None for c in self._companions) or time.monotonic() >= deadline:
                self._stop(signal.SIGKILL)
                raise _PortInUse(self._log_since(offset))  # a companion that cannot listen: its port is taken
            time.sleep(0.01)
        self._proc = self._spawn(argv)
        delay = 0.01
        while not self.ready():
            if self._proc.poll() is not None or time.monotonic() >= deadline:
                exited = self._proc.poll() is not None
                self._stop(signal.SIGKILL)
                said = self._log_since(offset)
                if exited and any(marker in said.lower() for marker in _IN_USE):
                    raise _PortInUse(said)
                why = "exited during startup" if exited else f"was not ready within {self.ready_timeout_s:.0f} s"
                raise HarnessError(f"{self.name} server ({' '.join(argv)}) {why}; {self.log_path} says:\n{said}")
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _stop(self, sig: signal.Signals) -> int:
        """Signal the server, then SIGKILL whatever of it outlives STOP_GRACE_S; wait until none is left."""
        proc, self._proc = self._proc, None
        returncode = 0
        if proc is not None:
            if sig == signal.SIGKILL:
                kill_tree(proc.pid)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)
            try:
                returncode = proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
                returncode = proc.wait(STOP_GRACE_S)
        survivors = server_processes(self.marker)
        for process in survivors:
            with contextlib.suppress(psutil.Error):
                process.kill()
        if left := [p.pid for p in wait_dead(survivors, STOP_GRACE_S) if is_alive(p)]:
            raise HarnessError(f"{self.name} processes {left} survived SIGKILL")
        for companion in self._companions:  # killed with the rest: reap them
            companion.wait(STOP_GRACE_S)
        self._companions = []
        return returncode

    def _teardown(self, emit: bool) -> None:
        pid = self.pid
        try:
            returncode = self._stop(self.close_signal)
            if emit and pid is not None:
                self._emit(events.backend_exit(pid, returncode, "close"))
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            ports.release(*self.ports.values())

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError as exc:
            return f"(could not read {self.log_path}: {exc})"
        return "\n".join(lines[-LOG_TAIL_LINES:])


class _PortInUse(Exception):
    def __init__(self, log: str) -> None:
        super().__init__("port in use")
        self.log = log
