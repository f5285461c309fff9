"""Ports for the listeners the suite starts (servers, proxies), kept theirs while they are down.

A server restarted by a fault, or a proxy re-enabled after a partition, listens again on the port its
clients know. A port the kernel picked (bind to port 0) lies in its ephemeral range, the range it also
hands to outgoing connections, so any connection made while the listener was down (a worker
reconnecting, a probe) could take it, and the restart failed with the port in use. So ports come from
outside the ephemeral range, and every port a process of the suite holds is locked, one byte per port
in one lock file in the temp dir, so that two runs side by side (test processes, users' CI jobs) never
pick the same one. The kernel drops a process's locks when it exits, however it exits.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

from chaos.errors import HarnessError

HOST = "127.0.0.1"
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # below it, the well-known and registered ports of the servers themselves (5432, 6379, ...)
MIN_POOL = 1000  # an outside range smaller than this is no pool: use any unprivileged port then
ATTEMPTS = 500

_mutex = threading.Lock()
_held: set[int] = set()
_lock_fd: int | None = None
_pick = random.Random()


def reserve(host: str = HOST) -> int:
    """A port free on host now, locked for this process until release(): no other process of the suite
    picks it, and (outside the ephemeral range) the kernel never hands it to an outgoing connection."""
    with _mutex:
        pool = _pool()
        for _ in range(ATTEMPTS):
            port = _pick.choice(pool)
            if port in _held or not _lock(port):
                continue
            if _bindable(host, port):
                _held.add(port)
                return port
            _unlock(port)
    raise HarnessError(f"no free port on {host} in {ATTEMPTS} tries between {pool.start} and {pool.stop - 1}; "
                       "close what listens there, or widen the range")


def release(*ports: int) -> None:
    """Give ports back (their listeners are closed for good); unknown ports are ignored."""
    with _mutex:
        for port in ports:
            if port in _held:
                _held.discard(port)
                _unlock(port)


def _pool() -> range:
    """The larger of the ranges below and above the kernel's ephemeral range, or every unprivileged port
    when neither is big enough."""
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    below, above = range(LOWEST, low), range(high + 1, 65536)
    best = max(below, above, key=len)
    return best if len(best) >= MIN_POOL else range(1024, 65536)


def _lock(port: int) -> bool:
    try:
        fcntl.lockf(_lock_file(), fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False  # another process of the suite holds it
        raise HarnessError(f"could not lock port {port} in {_lock_path()}: {exc}") from exc
    return True


def _unlock(port: int) -> None:
    fcntl.lockf(_lock_file(), fcntl.LOCK_UN, 1, port)


def _lock_file() -> int:
    """One descriptor for the process's life: closing any descriptor of the file drops all its locks."""
    global _lock_fd
    if _lock_fd is None:
        try:
            _lock_fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise HarnessError(f"could not open the port lock file {_lock_path()}: {exc}; make the temp dir "
                               "writable (or point TMPDIR at one that is)") from exc
    return _lock_fd


def _lock_path() -> Path:
    """In the temp dir: runs that share it (the same TMPDIR) never share a port."""
    return Path(tempfile.gettempdir()) / f"queue-chaos-ports-{os.getuid()}.lock"


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
