"""PostgreSQL backend providers: a private local server the nemesis may restart or kill, or a user's server.

The ``local`` provider starts its own ``postgres`` on a free port in the run dir, so a fault never
touches anything else on the machine. The ``external`` provider only gets a fresh schema on a server
the user names, so faults that need control of the server are unavailable there.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol, Self

import psutil
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from chaos.errors import ConfigError, HarnessError

EventSink = Callable[[str, dict[str, object]], None]
RestartMode = Literal["immediate", "fast"]

# Where Debian/Ubuntu install server binaries that are not on PATH; a constant so tests can patch it.
PG_LIB_ROOT = Path("/usr/lib/postgresql")
ENV_BIN = "CHAOS_POSTGRES_BIN"
# Copying one cached initdb'd cluster is 2-5x faster than running initdb (plus CREATE DATABASE) per run.
USE_TEMPLATE = True
TEMPLATE_PREFIX = "queue-chaos-pg-template"
ENV_URL = "CHAOS_POSTGRES_URL"
DATABASE = "chaos"
SUPERUSER = "postgres"
HOST = "127.0.0.1"
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
PORT_ATTEMPTS = 5
TEMPLATE_LOCK_TIMEOUT_S = 120.0
INITDB_ARGS = ("-A", "trust", "-U", SUPERUSER, "-N", "-E", "UTF8", "--locale=C", "--wal-segsize=1")
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


class PostgresBackend(Protocol):
    """What scenarios need from any provider: a DSN to hand to workers, and the server faults."""

    dsn: str

    def restart(self, mode: RestartMode = "immediate") -> None:
        """Stop the server (immediate = crash-like, fast = clean) and start it again on the same data."""

    def kill(self) -> None:
        """SIGKILL the whole server, leaving it down until restart()."""

    def close(self) -> None:
        """Stop and clean up everything the backend created; safe to call twice."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


# ---------------------------------------------------------------------------------------------------
# Binaries and the unprivileged user


@dataclass(frozen=True)
class PgBinaries:
    """The server binaries of one installation, so initdb and postgres always match."""

    initdb: Path
    postgres: Path
    version: str


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort /usr/lib/postgresql/<version> numerically, so 16 beats 9.6."""
    try:
        return tuple(int(part) for part in path.parent.name.split("."))
    except ValueError:
        return (-1,)


def _server_version(postgres: Path) -> str:
    """Ask the binary, since the template cache must never mix clusters of different versions."""
    try:
        out = subprocess.run([str(postgres), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise ConfigError(
            f"Expected {postgres} to be a runnable PostgreSQL server binary, but running it failed: {exc}. "
            "Reinstall the PostgreSQL server package, or use --backend external --backend-url DSN "
            f"(or set {ENV_URL})."
        ) from exc
    match = re.search(r"\(PostgreSQL\)\s+(\d+(?:\.\d+)*)", out.stdout)
    if out.returncode != 0 or match is None:
        found = " ".join((out.stdout + out.stderr).split()) or f"exit status {out.returncode}"
        raise ConfigError(
            f"Expected '{postgres} --version' to report a PostgreSQL version, but it printed: {found}. "
            "Reinstall the PostgreSQL server package, or use --backend external --backend-url DSN "
            f"(or set {ENV_URL})."
        )
    return match.group(1)


def find_binaries() -> PgBinaries:
    """Find initdb and postgres: in $CHAOS_POSTGRES_BIN only when set, else on PATH, else the newest
    Debian-style install under PG_LIB_ROOT."""
    chosen = os.environ.get(ENV_BIN)
    on_path = (shutil.which("initdb", path=chosen), shutil.which("postgres", path=chosen))
    pair: tuple[Path, Path] | None = None
    if chosen:
        if on_path[0] is None or on_path[1] is None:
            raise ConfigError(
                f"{ENV_BIN}={chosen} should be a directory holding the PostgreSQL server binaries initdb and "
                "postgres, but they are not there. Point it at your installation's bin directory (e.g. "
                "/usr/lib/postgresql/15/bin) or unset it to search PATH."
            )
        pair = (Path(on_path[0]), Path(on_path[1]))
    elif on_path[0] is not None and on_path[1] is not None:
        pair = (Path(on_path[0]), Path(on_path[1]))
    else:
        bin_dirs = sorted(PG_LIB_ROOT.glob("*/bin"), key=_version_key, reverse=True)
        for bin_dir in bin_dirs:
            initdb, postgres = bin_dir / "initdb", bin_dir / "postgres"
            if os.access(initdb, os.X_OK) and os.access(postgres, os.X_OK):
                pair = (initdb, postgres)
                break
    if pair is None:
        raise ConfigError(
            "The local PostgreSQL backend needs the PostgreSQL server binaries (initdb, postgres), "
            f"but neither PATH nor {PG_LIB_ROOT}/*/bin has both. Install them (e.g. the Debian/Ubuntu "
            "package 'postgresql', or put your installation's bin directory on PATH), or run against "
            f"an existing server with --backend external --backend-url DSN (or set {ENV_URL})."
        )
    return PgBinaries(initdb=pair[0], postgres=pair[1], version=_server_version(pair[1]))


@dataclass(frozen=True)
class RunAs:
    """Who initdb and the server run as; PostgreSQL refuses to run as root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool  # True when we are root and must drop to this user

    @property
    def user(self) -> int | None:
        return self.uid if self.switch else None

    @property
    def group(self) -> int | None:
        return self.gid if self.switch else None

    @property
    def extra_groups(self) -> list[int] | None:
        # Without this the child would keep root's supplementary groups.
        return list(self.groups) if self.switch else None


def resolve_run_as() -> RunAs:
    """Ourselves, or when root the 'postgres' system user (else 'nobody'), since postgres refuses root."""
    euid = os.geteuid()
    if euid != 0:
        try:
            name = pwd.getpwuid(euid).pw_name
        except KeyError:
            name = str(euid)
        return RunAs(name=name, uid=euid, gid=os.getegid(), groups=(), switch=False)
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        groups = tuple(os.getgrouplist(name, entry.pw_gid))
        return RunAs(name=name, uid=entry.pw_uid, gid=entry.pw_gid, groups=groups, switch=True)
    raise ConfigError(
        "Running as root, the local PostgreSQL backend must start the server as an unprivileged user "
        "(PostgreSQL refuses to run as root), but neither a 'postgres' nor a 'nobody' user exists on "
        "this machine. Create one (e.g. 'useradd --system postgres'), run the suite as a normal user, "
        f"or use --backend external --backend-url DSN (or set {ENV_URL})."
    )


def _can_traverse(path: Path, run_as: RunAs) -> bool:
    """Mode-bit check (owner, then group, then other), as the kernel does for search permission."""
    st = os.stat(path)
    if st.st_uid == run_as.uid:
        bit = stat.S_IXUSR
    elif st.st_gid == run_as.gid or st.st_gid in run_as.groups:
        bit = stat.S_IXGRP
    else:
        bit = stat.S_IXOTH
    return bool(st.st_mode & bit)


def _server_env() -> dict[str, str]:
    """The caller's environment without PG* variables (PGDATA, PGPORT...) that would change the cluster."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


# ---------------------------------------------------------------------------------------------------
# Process control: signal, wait without reaping, then sweep up every process of the server


def _exited(proc: subprocess.Popen[bytes]) -> bool:
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


def _wait_exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    delay = 0.002
    while not _exited(proc):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


@dataclass(frozen=True)
class _Identity:
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


def _live_processes(ident: _Identity) -> list[int]:
    """Live processes of this server; zombies are skipped (they hold no memory, ports or locks)."""
    found: list[int] = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if ident.matches(list(process.info["cmdline"] or [])):
                found.append(int(process.pid))
        except psutil.Error:
            continue
    return found


def _kill_tree(pid: int) -> None:
    """SIGKILL the postmaster and every descendant, with no window for it to fork a new child meanwhile."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    try:
        # Stopped, it cannot fork or reap, so these pids stay its (zombie) children until it dies.
        descendants = [int(child.pid) for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        descendants = []
    for victim in [*descendants, pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, signal.SIGKILL)


def _reap_and_sweep(proc: subprocess.Popen[bytes], ident: _Identity, timeout: float = 5.0) -> int:
    """Reap the exited postmaster, then SIGKILL any process of this server still alive (orphans)."""
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"PostgreSQL postmaster {proc.pid} did not exit even after SIGKILL") from exc
    deadline = time.monotonic() + timeout
    while survivors := _live_processes(ident):
        if time.monotonic() >= deadline:
            raise HarnessError(f"PostgreSQL processes {survivors} of {ident.pgdata} survived SIGKILL")
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    return returncode


def _stop(proc: subprocess.Popen[bytes], ident: _Identity, steps: Sequence[tuple[signal.Signals, float]]) -> int:
    """Send each signal in turn until the postmaster exits; SIGKILL goes to it and all its descendants."""
    for sig, grace in steps:
        if _exited(proc):
            break
        if sig == signal.SIGKILL:
            _kill_tree(proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
        if _wait_exited(proc, grace):
            break
    return _reap_and_sweep(proc, ident)


_FAST_STOP = ((signal.SIGINT, STOP_GRACE_S), (signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S))
_RESTART_STOP: dict[str, tuple[tuple[signal.Signals, float], ...]] = {
    "immediate": ((signal.SIGQUIT, 10.0), (signal.SIGKILL, STOP_GRACE_S)),
    "fast": ((signal.SIGINT, 30.0), (signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)),
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class _PortInUse(Exception):
    """The server could not bind its port: pick another (first start) or wait (restart)."""

    def __init__(self, port: int, log: str) -> None:
        super().__init__(f"port {port} in use")
        self.port = port
        self.log = log


class _TemplateUnavailable(Exception):
    """The shared template cannot be used safely; fall back to a plain initdb."""


# ---------------------------------------------------------------------------------------------------
# Template cluster cache


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float) -> Iterator[None]:
    """Exclusive flock on path, opened read-only so users other than its creator can lock it too."""
    fd = -1
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            break
        except FileNotFoundError:
            pass
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            break
        except FileExistsError:
            continue
    if fd < 0:
        raise _TemplateUnavailable(f"cannot open lock file {path}")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _TemplateUnavailable(f"timed out waiting for {path}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _template_marker(bins: PgBinaries) -> dict[str, object]:
    return {
        "initdb": os.path.realpath(bins.initdb),
        "version": bins.version,
        "args": list(INITDB_ARGS),
        "database": DATABASE,
    }


def _manifest(pgdata: Path) -> list[int]:
    """[files, bytes]: catches a template that /tmp cleaners (systemd-tmpfiles, tmpreaper) pruned in part."""
    files = size = 0
    for dirpath, _dirnames, filenames in os.walk(pgdata):
        for name in filenames:
            files += 1
            size += os.lstat(os.path.join(dirpath, name)).st_size
    return [files, size]


def _template_ok(root: Path, bins: PgBinaries, run_as: RunAs) -> bool:
    """Only trust a complete template nobody else could have planted or changed, built by these binaries."""
    try:
        for path in (root, root / "pgdata"):
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022:
                return False
            if st.st_uid not in (0, os.geteuid(), run_as.uid):
                return False
        marker = json.loads((root / "ok").read_text())
        return bool(marker == {**_template_marker(bins), "manifest": _manifest(root / "pgdata")})
    except (OSError, ValueError):
        return False


def template_path(bins: PgBinaries, run_as: RunAs) -> Path:
    """One template per server version and owning user, shared by every run on the machine."""
    return Path(tempfile.gettempdir()) / f"{TEMPLATE_PREFIX}-{bins.version}-{run_as.uid}"


def _run_as_user(args: list[str], run_as: RunAs, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            args,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd="/",
            env=_server_env(),
            user=run_as.user,
            group=run_as.group,
            extra_groups=run_as.extra_groups,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarnessError(f"could not run {args[0]} as {run_as.name}: {exc}") from exc


def build_cluster(bins: PgBinaries, run_as: RunAs, pgdata: Path) -> None:
    """initdb, then create the 'chaos' database in single-user mode, so no server start is needed for it."""
    pgdata.mkdir(mode=0o700)
    if run_as.switch:
        os.chown(pgdata, run_as.uid, run_as.gid)
    out = _run_as_user([str(bins.initdb), "-D", str(pgdata), *INITDB_ARGS], run_as)
    if out.returncode != 0:
        raise HarnessError(
            f"initdb of {pgdata} as user {run_as.name} failed (exit {out.returncode}):\n"
            + _tail(out.stdout + out.stderr)
        )
    single = [str(bins.postgres), "--single", "-D", str(pgdata), "-c", "fsync=off", "postgres"]
    out = _run_as_user(single, run_as, stdin=f'CREATE DATABASE "{DATABASE}";\n')
    if out.returncode != 0 or "ERROR:" in out.stdout + out.stderr:
        raise HarnessError(
            f"creating database {DATABASE} in {pgdata} (single-user mode) failed (exit {out.returncode}):\n"
            + _tail(out.stdout + out.stderr)
        )


def ensure_template(bins: PgBinaries, run_as: RunAs) -> Path:
    """Return the cached template's pgdata, building it once (under a lock, published by atomic rename)."""
    root = template_path(bins, run_as)
    if _template_ok(root, bins, run_as):
        return root / "pgdata"
    with _file_lock(root.with_name(root.name + ".lock"), TEMPLATE_LOCK_TIMEOUT_S):
        if _template_ok(root, bins, run_as):
            return root / "pgdata"
        if os.path.lexists(root):
            st = os.lstat(root)
            if st.st_uid not in (os.geteuid(), run_as.uid) and os.geteuid() != 0:
                raise _TemplateUnavailable(f"{root} exists and belongs to someone else")
            stale = root.with_name(f"{root.name}.stale-{os.getpid()}")
            try:
                os.rename(root, stale)
            except OSError as exc:
                raise _TemplateUnavailable(str(exc)) from exc
            shutil.rmtree(stale, ignore_errors=True)
        try:
            build = Path(tempfile.mkdtemp(prefix=root.name + ".tmp-", dir=root.parent))
        except OSError as exc:
            raise _TemplateUnavailable(str(exc)) from exc
        try:
            build.chmod(0o755)
            build_cluster(bins, run_as, build / "pgdata")
            marker = {**_template_marker(bins), "manifest": _manifest(build / "pgdata")}
            (build / "ok").write_text(json.dumps(marker))
            os.rename(build, root)
        except HarnessError as exc:
            # Maybe only the temp dir is the problem (full, odd mount): let a private initdb try, and fail.
            shutil.rmtree(build, ignore_errors=True)
            raise _TemplateUnavailable(str(exc)) from exc
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
    return root / "pgdata"


def _copy_cluster(src: Path, dst: Path, run_as: RunAs) -> None:
    """Copy the template keeping modes, and ownership by the server user (copytree does not chown)."""
    shutil.copytree(src, dst, symlinks=True)
    if run_as.switch:
        os.chown(dst, run_as.uid, run_as.gid)
        for dirpath, dirnames, filenames in os.walk(dst):
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), run_as.uid, run_as.gid, follow_symlinks=False)


# ---------------------------------------------------------------------------------------------------
# Local provider

# Strong references: a backend dropped without close() must still be stopped at exit.
_LIVE: set[LocalPostgres] = set()


def _close_live_servers() -> None:
    """Last resort on interpreter exit: never leave a server of ours running (SIGKILL of us excepted)."""
    for backend in list(_LIVE):
        with contextlib.suppress(Exception):
            backend.close()


atexit.register(_close_live_servers)


class LocalPostgres:
    """A private server in data_root (provider 'local'), so faults never touch anything else."""

    provider = "local"

    def __init__(self, data_root: Path, on_event: EventSink | None = None) -> None:
        self.data_root = Path(data_root).absolute()
        self.pgdata = self.data_root / "pgdata"
        self.log_path = self.data_root / "postgres.log"
        # Unique per instance: its processes are titled 'postgres: <cluster_name>: ...', so orphans can be found.
        self.cluster_name = f"queue-chaos-{secrets.token_hex(4)}"
        self.dsn = ""
        self.init_method: Literal["template", "initdb"] | None = None
        self._on_event = on_event
        self._bins: PgBinaries | None = None
        self._run_as: RunAs | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._create_time: float | None = None
        self._owns_pgdata = False  # so a failed start never deletes a data dir it did not create
        self._private_root: Path | None = None
        self._started = False
        self._closed = False

    # -- public ------------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The postmaster's pid, or None while the server is down (after kill() or close())."""
        return self._proc.pid if self._proc is not None else None

    @property
    def create_time(self) -> float | None:
        """The postmaster's start time (psutil), to tell it apart from a later process reusing the pid."""
        return self._create_time if self._proc is not None else None

    @property
    def port(self) -> int:
        if self._port is None:
            raise HarnessError("LocalPostgres has not been started")
        return self._port

    def start(self) -> LocalPostgres:
        """Copy the cached template cluster (or initdb), then start the server; dsn points at database 'chaos'."""
        if self._closed:
            raise HarnessError("LocalPostgres.start() after close()")
        if self._started:
            return self
        began = time.monotonic()
        _LIVE.add(self)
        try:
            self._bins = find_binaries()
            self._run_as = resolve_run_as()
            self._prepare_dirs(self._run_as)
            self._init_pgdata(self._bins, self._run_as)
            self._start_on_free_port()
            self.dsn = self._conninfo(DATABASE, self.port)
            self._started = True
            self._emit(
                "backend.start",
                {"pid": self.pid, "port": self.port, "provider": self.provider, "start_s": time.monotonic() - began},
            )
        except BaseException:
            # Nothing half-started survives a failed start (or a failing on_event): __exit__ never runs then.
            self._started = False
            _LIVE.discard(self)
            self._teardown(emit=False)
            raise
        return self

    def restart(self, mode: RestartMode = "immediate") -> None:
        """Stop (immediate = SIGQUIT, crash-like; fast = SIGINT, clean) and start on the same data and port."""
        if mode not in _RESTART_STOP:
            raise ConfigError(
                f"Expected a PostgreSQL restart mode of 'immediate' or 'fast', but got {mode!r}. "
                "Fix the fault's mode in the scenario."
            )
        self._require_running_instance()
        old_pid = self.pid
        began = time.monotonic()
        if self._proc is not None:
            proc, self._proc = self._proc, None
            _stop(proc, self._identity(), _RESTART_STOP[mode])
        self._relaunch_same_port()
        self._emit(
            "backend.restart",
            {"mode": mode, "old_pid": old_pid, "new_pid": self.pid, "down_s": time.monotonic() - began},
        )

    def kill(self) -> None:
        """SIGKILL the postmaster and all its processes (a machine-crash-like fault); restart() revives it."""
        self._require_running_instance()
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        returncode = _stop(proc, self._identity(), ((signal.SIGKILL, STOP_GRACE_S),))
        self._emit("backend.exit", {"pid": proc.pid, "returncode": returncode, "reason": "kill"})

    def close(self) -> None:
        """Fast shutdown (escalating to SIGQUIT, then SIGKILL of all its processes), delete pgdata; idempotent."""
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        self._teardown(emit=self._started)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------------

    def _identity(self) -> _Identity:
        assert self._bins is not None
        return _Identity(postgres=str(self._bins.postgres), pgdata=str(self.pgdata), cluster_name=self.cluster_name)

    def _emit(self, kind: str, data: dict[str, object]) -> None:
        if self._on_event is not None:
            self._on_event(kind, data)

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
            blocked = [p for p in (self.data_root, *self.data_root.parents) if not _can_traverse(p, run_as)]
            if blocked:
                # The server user cannot reach the run dir (e.g. under a 0700 home): keep the log there,
                # which root writes for it, and put the cluster in a private directory it can reach.
                self._private_root = Path(tempfile.mkdtemp(prefix="queue-chaos-pgdata-"))
                self._private_root.chmod(0o755)
                self.pgdata = self._private_root / "pgdata"

    def _init_pgdata(self, bins: PgBinaries, run_as: RunAs) -> None:
        self._owns_pgdata = True
        if USE_TEMPLATE:
            try:
                template = ensure_template(bins, run_as)
                _copy_cluster(template, self.pgdata, run_as)
                self.init_method = "template"
                return
            except (_TemplateUnavailable, OSError):
                # A shared cache we cannot use must not fail the run: a private initdb always works.
                shutil.rmtree(self.pgdata, ignore_errors=True)
        build_cluster(bins, run_as, self.pgdata)
        self.init_method = "initdb"

    def _conninfo(self, dbname: str, port: int) -> str:
        return make_conninfo(host=HOST, port=str(port), user=SUPERUSER, dbname=dbname)

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
                    env=_server_env(),
                    start_new_session=True,
                    user=self._run_as.user,
                    group=self._run_as.group,
                    extra_groups=self._run_as.extra_groups,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise HarnessError(f"could not start {self._bins.postgres} as {self._run_as.name}: {exc}") from exc

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                return log.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(could not read {self.log_path}: {exc})"

    def _launch(self, port: int) -> None:
        """Start the postmaster on port and wait until it accepts connections; raise _PortInUse if it can't bind."""
        offset = self.log_path.stat().st_size
        proc = self._spawn(port)
        self._proc = proc
        deadline = time.monotonic() + READY_TIMEOUT_S
        conninfo = self._conninfo("postgres", port)
        delay = 0.005
        while True:
            if _exited(proc):
                self._proc = None
                returncode = _reap_and_sweep(proc, self._identity())
                log = self._log_since(offset)
                if any(marker in log for marker in _PORT_IN_USE):
                    raise _PortInUse(port, log)
                raise HarnessError(
                    f"PostgreSQL server exited with status {returncode} during startup; "
                    f"{self.log_path} says:\n{_tail(log)}"
                )
            if self._accepts_connections(conninfo):
                break
            if time.monotonic() >= deadline:
                self._proc = None
                _stop(proc, self._identity(), ((signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)))
                raise HarnessError(
                    f"PostgreSQL server did not accept connections on {HOST}:{port} within "
                    f"{READY_TIMEOUT_S:.0f} s; {self.log_path} says:\n{_tail(self._log_since(offset))}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        self._port = port
        try:
            self._create_time = float(psutil.Process(proc.pid).create_time())
        except psutil.Error:
            self._create_time = None

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

    def _start_on_free_port(self) -> None:
        last: _PortInUse | None = None
        for _ in range(PORT_ATTEMPTS):
            try:
                self._launch(_free_port())
                return
            except _PortInUse as exc:
                last = exc
        assert last is not None
        raise HarnessError(
            f"PostgreSQL could not bind a free port in {PORT_ATTEMPTS} attempts; last log:\n{_tail(last.log)}"
        )

    def _relaunch_same_port(self) -> None:
        port = self.port
        last: _PortInUse | None = None
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._launch(port)
                return
            except _PortInUse as exc:
                last = exc
                time.sleep(0.2 * (attempt + 1))
        assert last is not None
        raise HarnessError(
            f"PostgreSQL could not restart on its port {port}: something else took it while it was down; "
            f"log:\n{_tail(last.log)}"
        )

    def _teardown(self, emit: bool) -> None:
        """Stop whatever runs and delete pgdata; used by close() and by a start() that failed halfway."""
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                returncode = _stop(proc, self._identity(), _FAST_STOP)
                if emit:
                    self._emit("backend.exit", {"pid": proc.pid, "returncode": returncode, "reason": "close"})
        finally:
            if self._owns_pgdata and os.path.lexists(self.pgdata):
                try:
                    shutil.rmtree(self.pgdata)
                except OSError as exc:
                    raise HarnessError(f"could not delete PostgreSQL data directory {self.pgdata}: {exc}") from exc
            if self._private_root is not None:
                shutil.rmtree(self._private_root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------
# External provider


def mask_password(url: str) -> str:
    """The URL or conninfo with any password replaced by ***, safe for messages and logs."""
    masked = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url)
    masked = re.sub(r"([?&]password=)[^&#]*", r"\1***", masked)
    if "://" not in url:
        masked = re.sub(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", masked)
    return masked


def schema_name(run_id: str) -> str:
    """chaos_<run_id> reduced to a plain lower-case identifier within PostgreSQL's 63-byte limit."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", run_id.lower()).strip("_") or "run"
    return f"chaos_{cleaned}"[:63]


class ExternalPostgres:
    """A user's server (provider 'external'): the run gets its own schema and no server faults."""

    provider = "external"

    def __init__(self, url: str, run_id: str) -> None:
        self.url = url
        self.run_id = run_id
        self.schema = schema_name(run_id)
        self.dsn = ""
        self._started = False
        self._closed = False

    def start(self) -> ExternalPostgres:
        """Check the server is reachable and create a fresh schema that dsn's search_path points at."""
        if self._closed:
            raise HarnessError("ExternalPostgres.start() after close()")
        if self._started:
            return self
        masked = mask_password(self.url)
        try:
            params = conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise ConfigError(
                f"Expected a PostgreSQL URL or conninfo string (e.g. postgresql://user:pass@host:5432/db), "
                f"but {masked!r} cannot be parsed: {' '.join(str(exc).split())}. Fix --backend-url or {ENV_URL}."
            ) from exc
        schema = sql.Identifier(self.schema)
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn, conn.transaction():
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigError(
                f"Expected to create schema {self.schema} on the external PostgreSQL server {masked}, but "
                f"the server refused: {' '.join(str(exc).split())}. Grant the user CREATE on the database "
                "(GRANT CREATE ON DATABASE ... TO ...), or connect as a user that has it."
            ) from exc
        except psycopg.OperationalError as exc:
            raise ConfigError(
                f"Expected a reachable PostgreSQL server at {masked} (from --backend-url or {ENV_URL}), but "
                f"connecting failed: {' '.join(str(exc).split())}. Check the host, port, user, password and "
                "database name and that the server accepts TCP connections from here, or drop "
                "--backend external to let the suite start its own server."
            ) from exc
        except psycopg.Error as exc:
            raise HarnessError(f"could not create schema {self.schema} on {masked}: {exc}") from exc
        options = f"{params.get('options') or ''} -csearch_path={self.schema}".strip()
        self.dsn = make_conninfo(self.url, options=options)
        self._started = True
        return self

    def restart(self, mode: RestartMode = "immediate") -> None:
        raise self._no_control(f"restart ({mode})")

    def kill(self) -> None:
        raise self._no_control("kill")

    def _no_control(self, fault: str) -> ConfigError:
        return ConfigError(
            f"The PostgreSQL {fault} fault needs control of the server process, but the backend is the "
            f"external server {mask_password(self.url)}, which the suite does not own. Run the scenario "
            "with the local provider (drop --backend external), or pick a scenario without server faults."
        )

    def close(self) -> None:
        """Drop the run's schema (CASCADE); idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._started:
            return
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
        except psycopg.Error as exc:
            raise HarnessError(
                f"could not drop schema {self.schema} on {mask_password(self.url)}; drop it by hand: {exc}"
            ) from exc

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_postgres(
    provider: str,
    data_root: Path,
    url: str | None,
    run_id: str,
    on_event: EventSink | None = None,
) -> PostgresBackend:
    """Build and start the backend the user chose; url (or CHAOS_POSTGRES_URL) is only for 'external'."""
    if provider == "local":
        return LocalPostgres(data_root, on_event).start()
    if provider == "external":
        url = url or os.environ.get(ENV_URL) or None
        if url is None:
            raise ConfigError(
                "The external PostgreSQL provider needs the URL of an existing server, but neither "
                f"--backend-url nor {ENV_URL} is set. Pass --backend-url postgresql://user:pass@host:5432/db "
                f"(or export {ENV_URL}), or drop --backend external to let the suite start its own server."
            )
        backend = ExternalPostgres(url, run_id).start()
        if on_event is not None:
            on_event("backend.start", {"provider": "external", "url": mask_password(url), "schema": backend.schema})
        return backend
    raise ConfigError(
        f"Expected a PostgreSQL backend provider of 'local' or 'external', but got {provider!r}. "
        "Fix the --backend option (or the scenario's backend setting)."
    )
