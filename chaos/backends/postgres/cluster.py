"""A fresh cluster per run: a copy of one cached template cluster, else a private initdb.

Copying one cached initdb'd cluster is 2-5x faster than running initdb (plus CREATE DATABASE) per run.
The template is built in a sibling directory named with its builder's pid and renamed into place once
complete, so one whose builder was killed is recognised (its pid is gone) and removed by the next build
or `chaos clean`. It lives in the temp dir, or in CHAOS_POSTGRES_TEMPLATE_DIR (e.g. a CI cache).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from chaos.backends.postgres.binaries import PgBinaries
from chaos.backends.postgres.user import RunAs, run_as_user, tail
from chaos.errors import HarnessError
from chaos.events import ENV_POSTGRES_TEMPLATE_DIR
from chaos.procs import pid_alive

InitMethod = Literal["template", "initdb"]

# A constant so tests can patch it (in this module, where it is read).
USE_TEMPLATE = True
TEMPLATE_PREFIX = "queue-chaos-pg-template"
TEMPLATE_LOCK_TIMEOUT_S = 120.0
DATABASE = "chaos"
SUPERUSER = "postgres"
# A build in progress (`.tmp-<pid>-...`) or a bad template set aside (`.stale-<pid>`), by its maker's pid.
_HALF_BUILT = re.compile(re.escape(TEMPLATE_PREFIX) + r"-[^/]+\.(?:tmp|stale)-(\d+)(?:-[^/]*)?")
INITDB_ARGS = ("-A", "trust", "-U", SUPERUSER, "-N", "-E", "UTF8", "--locale=C", "--wal-segsize=1")


class _TemplateUnavailable(Exception):
    """The shared template cannot be used safely; fall back to a plain initdb."""


def create_cluster(bins: PgBinaries, run_as: RunAs, pgdata: Path) -> InitMethod:
    """Put a cluster with the 'chaos' database at pgdata (which must not exist); say how it was made."""
    if USE_TEMPLATE:
        try:
            _copy_cluster(_ensure_template(bins, run_as), pgdata, run_as)
            return "template"
        except (_TemplateUnavailable, OSError):
            # A shared cache we cannot use must not fail the run: a private initdb always works.
            shutil.rmtree(pgdata, ignore_errors=True)
    _build_cluster(bins, run_as, pgdata)
    return "initdb"


def _build_cluster(bins: PgBinaries, run_as: RunAs, pgdata: Path) -> None:
    """initdb, then create the 'chaos' database in single-user mode, so no server start is needed for it."""
    pgdata.mkdir(mode=0o700)
    if run_as.switch:
        os.chown(pgdata, run_as.uid, run_as.gid)
    out = run_as_user([str(bins.initdb), "-D", str(pgdata), *INITDB_ARGS], run_as)
    if out.returncode != 0:
        raise HarnessError(
            f"initdb of {pgdata} as user {run_as.name} failed (exit {out.returncode}):\n"
            + tail(out.stdout + out.stderr)
        )
    single = [str(bins.postgres), "--single", "-D", str(pgdata), "-c", "fsync=off", "postgres"]
    out = run_as_user(single, run_as, stdin=f'CREATE DATABASE "{DATABASE}";\n')
    if out.returncode != 0 or "ERROR:" in out.stdout + out.stderr:
        raise HarnessError(
            f"creating database {DATABASE} in {pgdata} (single-user mode) failed (exit {out.returncode}):\n"
            + tail(out.stdout + out.stderr)
        )


def _copy_cluster(src: Path, dst: Path, run_as: RunAs) -> None:
    """Copy the template keeping modes, and ownership by the server user (copytree does not chown)."""
    shutil.copytree(src, dst, symlinks=True)
    if run_as.switch:
        os.chown(dst, run_as.uid, run_as.gid)
        for dirpath, dirnames, filenames in os.walk(dst):
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), run_as.uid, run_as.gid, follow_symlinks=False)


def _ensure_template(bins: PgBinaries, run_as: RunAs) -> Path:
    """Return the cached template's pgdata, building it once (under a lock, published by atomic rename)."""
    root = _template_path(bins, run_as)
    if _template_ok(root, bins, run_as):
        return root / "pgdata"
    with _file_lock(root.with_name(root.name + ".lock"), TEMPLATE_LOCK_TIMEOUT_S):
        if _template_ok(root, bins, run_as):
            return root / "pgdata"
        remove_half_built_templates(root.parent)
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
            build = Path(tempfile.mkdtemp(prefix=f"{root.name}.tmp-{os.getpid()}-", dir=root.parent))
        except OSError as exc:
            raise _TemplateUnavailable(str(exc)) from exc
        try:
            build.chmod(0o755)
            _build_cluster(bins, run_as, build / "pgdata")
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


def template_dir() -> Path:
    """Where templates live: CHAOS_POSTGRES_TEMPLATE_DIR, else the temp dir."""
    return Path(os.environ.get(ENV_POSTGRES_TEMPLATE_DIR) or tempfile.gettempdir())


def _template_path(bins: PgBinaries, run_as: RunAs) -> Path:
    """One template per server version and owning user, shared by every run on the machine."""
    return template_dir() / f"{TEMPLATE_PREFIX}-{bins.version}-{run_as.uid}"


def remove_half_built_templates(where: Path | None = None) -> list[str]:
    """Delete the template builds (and set-aside templates) in `where` whose builder is gone, a line each.

    Only directories named as this module names them are touched, and only once no process has the pid
    in their name: a build in progress is never removed (a reused pid only delays the removal)."""
    where = where or template_dir()
    said = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return []
    for entry in entries:
        match = _HALF_BUILT.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False) or pid_alive(int(match[1])):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            said.append(f"removed a half-built PostgreSQL template {entry.path} (its builder, pid {match[1]}, "
                        "is gone)")
    return said


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
