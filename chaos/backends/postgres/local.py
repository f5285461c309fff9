"""The local provider: a private server on a free port in the run dir, so a fault never touches anything
else on the machine, and the nemesis may restart or kill it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Self

import psutil
import psycopg
from psycopg.conninfo import make_conninfo

from chaos import events, ports
from chaos.backends.base import KILL, RESTART, BackendSettings, EventSink
from chaos.backends.local_server import LIVE
from chaos.backends.postgres.base import PostgresBackend
from chaos.backends.postgres.binaries import PgBinaries, find_binaries
from chaos.backends.postgres.cluster import DATABASE, SUPERUSER, InitMethod, create_cluster
from chaos.backends.postgres.process import (
    ABORT_STOP,
    CLOSE_STOP,
    KILL_STOP,
    RESTART_STOP,
    ServerIdentity,
    exited,
    live_processes,
    reap_and_sweep,
    stop,
)
from chaos.backends.postgres.user import RunAs, can_traverse, resolve_run_as, server_env, tail
from chaos.errors import ConfigError, HarnessError
from chaos.events import Record
from chaos.ownership import OWNER_FILE, mark, marked, new_marker, plain, why_not_owned
from chaos.procs import die_with_parent

HOST = ports.HOST  # where the port was reserved (checked free)
PRIVATE_ROOT_PREFIX = "queue-chaos-pgdata-"  # where pgdata goes when the server user cannot reach the run dir
READY_TIMEOUT_S = 30.0
PORT_ATTEMPTS = 5
# Durability is traded away only where a *process* crash cannot lose data: fsync and full_page_writes
# only matter when the OS or machine dies. synchronous_commit stays on: with it off, an immediate
# restart or kill loses acknowledged commits (WAL still in shared memory), which a chaos run would
# then blame on the queue under test. With fsync off, on costs one write() per commit.
SERVER_SETTINGS: dict[str, str] = {
    "listen_addresses": HOST,
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "on",
    "full_page_writes": "off",
    "max_connections": "200",
    "logging_collector": "off",
}
_PORT_IN_USE = ("Address already in use", "could not bind IPv4", "could not create any TCP/IP sockets")

def private_root_for(data_root: Path) -> Path:
    """Where the cluster of the backend at `data_root` goes when the server user cannot reach it: named
    after it, so it can be journaled before it is made, and recognised as that run's."""
    digest = hashlib.sha256(str(data_root).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"{PRIVATE_ROOT_PREFIX}{digest}"


def _why_not_private_root(pgdata: Path, run_dir: Path, cluster: str, data_root: str) -> str:
    """'' when `pgdata` is in the private root named for a data root inside `run_dir` (journaled with it),
    holding the owner file with the run's marker; else why it is not, for a message."""
    root = Path(data_root)
    if not data_root or not plain(root) or root.parent.resolve() != run_dir.resolve():
        return f"its ledger names no data root inside this run's directory {run_dir}"
    if pgdata != private_root_for(root) / "pgdata" or not plain(pgdata.parent):
        return f"it is not the private directory named for {root}"
    if not marked(pgdata.parent, cluster):
        return f"{pgdata.parent} holds no owner file ({OWNER_FILE}) with the run's marker {cluster!r}"
    return ""


class _PortInUse(Exception):
    """The server could not bind its port: pick another (first start) or wait (restart)."""

    def __init__(self, port: int, log: str) -> None:
        super().__init__(f"port {port} in use")
        self.log = log


class LocalPostgres(PostgresBackend):
    """A private server in data_root (provider 'local'), so faults never touch anything else."""

    provider: ClassVar[str] = "local"
    capabilities: ClassVar[frozenset[str]] = frozenset({RESTART, KILL})

    def __init__(self, data_root: Path, on_event: EventSink | None = None) -> None:
        self.data_root = Path(data_root).absolute()
        self.pgdata = self.data_root / "pgdata"
        self.log_path = self.data_root / "postgres.log"
        # The run's marker (chaos.ownership): its processes are titled 'postgres: <cluster_name>: ...', which
        # is how its orphans are found (their title is written over their environment).
        self.cluster_name = new_marker()
        self.dsn = ""
        self.init_method: InitMethod | None = None
        self._on_event = on_event
        self._bins: PgBinaries | None = None
        self._run_as: RunAs | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._owns_pgdata = False  # so a failed start never deletes a data dir it did not create
        self._private_root: Path | None = None
        self._reserved = 0  # the port ports.reserve() gave it (0: none yet)
        self._started = False
        self._closed = False

    # -- public ------------------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        return cls(settings.data_root, settings.on_event).start()

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """SIGKILL whatever of that server still runs (its processes carry its cluster name, the run's
        marker, in their title) and delete its data directory, complete or half-made (`started` may be its
        `backend.prepare`), once it proves it is the run's: a `pgdata` in the run's own dir or in the private
        root named for it, beside the owner file with that marker. Anything else is reported, untouched."""
        named, cluster = str(started.get("pgdata") or ""), str(started.get("cluster_name") or "")
        if not named:
            return True, ""
        pgdata = Path(named)
        private = pgdata.parent.name.startswith(PRIVATE_ROOT_PREFIX)
        why = (_why_not_private_root(pgdata, run_dir, cluster, str(started.get("data_root") or "")) if private
               else why_not_owned(named, run_dir, cluster, "pgdata"))
        if why:
            if not os.path.lexists(pgdata):
                return True, ""  # nothing there, and its server died with its runner (parent-death signal)
            return False, f"its PostgreSQL data directory {pgdata} is not touched: {why}"
        ident = ServerIdentity(postgres=str(started.get("postgres")), pgdata=named, cluster_name=cluster)
        for process in live_processes(ident):
            with contextlib.suppress(psutil.Error):
                process.kill()
        if not os.path.lexists(pgdata.parent if private else pgdata):
            return True, ""
        shutil.rmtree(pgdata.parent if private else pgdata, ignore_errors=True)
        return True, f"removed its PostgreSQL data directory {pgdata}"

    @property
    def pid(self) -> int | None:
        """The postmaster's pid, or None while the server is down (after kill() or close())."""
        return self._proc.pid if self._proc is not None else None

    @property
    def port(self) -> int:
        if self._port is None:
            raise HarnessError("LocalPostgres has not been started")
        return self._port

    def start(self) -> Self:
        """Copy the cached template cluster (or initdb), then start the server; dsn points at database 'chaos'."""
        if self._closed:
            raise HarnessError("LocalPostgres.start() after close()")
        if self._started:
            return self
        began = time.monotonic()
        LIVE.add(self)
        try:
            self._bins = find_binaries()
            self._run_as = resolve_run_as()
            self._prepare_dirs(self._run_as)
            # Marked and journaled before the data dir (or the private root holding it) exists: a runner killed
            # from here on leaves nothing `chaos clean` cannot find and prove the run's (the private root is
            # marked as soon as it is made).
            if self.pgdata.parent == self.data_root:
                mark(self.data_root, self.cluster_name)
            self._emit(events.backend_prepare(provider=self.provider, pgdata=str(self.pgdata),
                                              cluster_name=self.cluster_name, postgres=str(self._bins.postgres),
                                              data_root=str(self.data_root)))
            self._make_private_root()
            self._owns_pgdata = True
            self.init_method = create_cluster(self._bins, self._run_as, self.pgdata)
            self._launch_retrying(self._fresh_port, 0.0, f"PostgreSQL could not bind a free port in {PORT_ATTEMPTS} "
                                  "attempts; last log")
            self.dsn = _conninfo(DATABASE, self.port)
            self._started = True
            self._emit(events.backend_start(pid=self.pid, port=self.port, provider=self.provider,
                                            start_s=time.monotonic() - began, pgdata=str(self.pgdata),
                                            cluster_name=self.cluster_name, postgres=str(self._bins.postgres),
                                            data_root=str(self.data_root), version=f"PostgreSQL {self._bins.version}"))
        except BaseException:
            # Nothing half-started survives a failed start (or a failing on_event): __exit__ never runs then.
            self._started = False
            LIVE.discard(self)
            self._teardown(emit=False)
            raise
        return self

    def restart(self, mode: str = "immediate") -> None:
        """Stop (immediate = SIGQUIT, crash-like; fast = SIGINT, clean) and start on the same data and port."""
        if mode not in RESTART_STOP:
            raise ConfigError(
                f"Expected a PostgreSQL restart mode of 'immediate' or 'fast', but got {mode!r}. "
                "Fix the fault's mode in the scenario."
            )
        self._require_running_instance()
        old_pid = self.pid
        began = time.monotonic()
        if self._proc is not None:
            proc, self._proc = self._proc, None
            stop(proc, self._identity(), RESTART_STOP[mode])
        port = self.port
        # Pausing between attempts: whatever took the port while the server was down may let it go.
        self._launch_retrying(lambda: port, 0.2, f"PostgreSQL could not restart on its port {port}: something "
                              "else took it while it was down; log")
        self._emit(events.backend_restart(mode, old_pid, self.pid, time.monotonic() - began))

    def kill(self) -> None:
        """SIGKILL the postmaster and all its processes (a machine-crash-like fault); restart() revives it."""
        self._require_running_instance()
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        returncode = stop(proc, self._identity(), KILL_STOP)
        self._emit(events.backend_exit(proc.pid, returncode, "kill"))

    def close(self) -> None:
        """Fast shutdown (escalating to SIGQUIT, then SIGKILL of all its processes), delete pgdata; idempotent."""
        if self._closed:
            return
        self._closed = True
        LIVE.discard(self)
        self._teardown(emit=self._started)

    # -- internals ---------------------------------------------------------------------------------

    def _identity(self) -> ServerIdentity:
        assert self._bins is not None
        return ServerIdentity(postgres=str(self._bins.postgres), pgdata=str(self.pgdata),
                              cluster_name=self.cluster_name)

    def _emit(self, record: Record) -> None:
        if self._on_event is not None:
            self._on_event(record)

    def _require_running_instance(self) -> None:
        if not self._started or self._closed:
            raise HarnessError("LocalPostgres is not started (or already closed)")

    def _prepare_dirs(self, run_as: RunAs) -> None:
        if os.path.lexists(self.pgdata):
            raise ConfigError(
                f"Expected no PostgreSQL data directory at {self.pgdata} (each run creates its own), but "
                "one already exists, maybe from an earlier run. Use a fresh run directory, or delete it "
                "after making sure no server is still using it."
            )
        try:
            if not self.data_root.exists():
                self.data_root.mkdir(parents=True)
                # Ours, so make it reachable for the server user whatever the umask.
                self.data_root.chmod(0o755)
            self.log_path.touch()
        except OSError as exc:
            raise ConfigError(
                f"Expected to create the PostgreSQL run directory {self.data_root}, but got: {exc}. "
                "Choose a run directory on a writable filesystem."
            ) from exc
        if run_as.switch:
            blocked = [p for p in (self.data_root, *self.data_root.parents) if not can_traverse(p, run_as)]
            if blocked:
                # The server user cannot reach the run dir (e.g. under a 0700 home): keep the log there,
                # which root writes for it, and put the cluster in a private directory it can reach, named
                # after the run dir so it can be journaled before it is made.
                self.pgdata = private_root_for(self.data_root) / "pgdata"

    def _make_private_root(self) -> None:
        """Create the private directory _prepare_dirs chose, if it chose one; ours to delete from then on."""
        root = self.pgdata.parent
        if root == self.data_root:
            return
        try:
            root.mkdir(mode=0o755)
        except OSError as exc:
            raise HarnessError(f"could not create the private PostgreSQL directory {root}: {exc}") from exc
        self._private_root = root
        root.chmod(0o755)
        mark(root, self.cluster_name)

    def _fresh_port(self) -> int:
        """A newly reserved port, giving back the one a failed first start tried."""
        ports.release(self._reserved)
        self._reserved = ports.reserve()
        return self._reserved

    def _launch_retrying(self, port: Callable[[], int], pause_s: float, failure: str) -> None:
        """Launch on port(), up to PORT_ATTEMPTS times while the port is taken, pausing longer each time."""
        log = ""
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._launch(port())
                return
            except _PortInUse as exc:
                log = exc.log
                time.sleep(pause_s * (attempt + 1))
        raise HarnessError(f"{failure}:\n{tail(log)}")

    def _launch(self, port: int) -> None:
        """Start the postmaster on port and wait until it accepts connections; raise _PortInUse if it can't bind."""
        offset = self.log_path.stat().st_size
        proc = self._spawn(port)
        self._proc = proc
        deadline = time.monotonic() + READY_TIMEOUT_S
        conninfo = _conninfo("postgres", port)
        delay = 0.005
        while True:
            if exited(proc):
                self._proc = None
                returncode = reap_and_sweep(proc, self._identity())
                log = self._log_since(offset)
                if any(marker in log for marker in _PORT_IN_USE):
                    raise _PortInUse(port, log)
                raise HarnessError(
                    f"PostgreSQL server exited with status {returncode} during startup; "
                    f"{self.log_path} says:\n{tail(log)}"
                )
            if self._accepts_connections(conninfo):
                break
            if time.monotonic() >= deadline:
                self._proc = None
                stop(proc, self._identity(), ABORT_STOP)
                raise HarnessError(
                    f"PostgreSQL server did not accept connections on {HOST}:{port} within "
                    f"{READY_TIMEOUT_S:.0f} s; {self.log_path} says:\n{tail(self._log_since(offset))}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        self._port = port

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        assert self._bins is not None and self._run_as is not None
        args = [str(self._bins.postgres), "-D", str(self.pgdata), "-p", str(port)]
        for name, value in {**SERVER_SETTINGS, "cluster_name": self.cluster_name}.items():
            args += ["-c", f"{name}={value}"]
        with open(self.log_path, "ab") as log:
            try:
                return subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd="/",
                    env=server_env(),
                    start_new_session=True,
                    # SIGQUIT is PostgreSQL's immediate shutdown: it also ends the server's children.
                    preexec_fn=die_with_parent(signal.SIGQUIT),
                    user=self._run_as.user,
                    group=self._run_as.group,
                    extra_groups=self._run_as.extra_groups,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise HarnessError(f"could not start {self._bins.postgres} as {self._run_as.name}: {exc}") from exc

    def _accepts_connections(self, conninfo: str) -> bool:
        """Connect and check it is OUR server (another one may sit on the port while ours fails to bind)."""
        try:
            with psycopg.connect(conninfo, connect_timeout=2, autocommit=True, sslmode="disable") as conn:
                row = conn.execute("SHOW data_directory").fetchone()
        except psycopg.Error:
            return False
        try:
            return row is not None and os.path.samefile(str(row[0]), self.pgdata)
        except OSError:
            return False

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                return log.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(could not read {self.log_path}: {exc})"

    def _teardown(self, emit: bool) -> None:
        """Stop whatever runs and delete pgdata; used by close() and by a start() that failed halfway."""
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                returncode = stop(proc, self._identity(), CLOSE_STOP)
                if emit:
                    self._emit(events.backend_exit(proc.pid, returncode, "close"))
        finally:
            ports.release(self._reserved)
            if self._owns_pgdata and os.path.lexists(self.pgdata):
                try:
                    shutil.rmtree(self.pgdata)
                except OSError as exc:
                    raise HarnessError(f"could not delete PostgreSQL data directory {self.pgdata}: {exc}") from exc
            if self._private_root is not None:
                shutil.rmtree(self._private_root, ignore_errors=True)


def _conninfo(dbname: str, port: int) -> str:
    return make_conninfo(host=HOST, port=str(port), user=SUPERUSER, dbname=dbname)
