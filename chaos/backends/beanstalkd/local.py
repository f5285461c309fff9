"""The local beanstalkd provider: a private `beanstalkd` in the run dir, writing its binlog there when
the target's [server] `binlog` is on, so a restart keeps exactly what the binlog keeps."""

from __future__ import annotations

import socket
from typing import Any, ClassVar

from chaos.backends.beanstalkd import BINLOG
from chaos.backends.local_server import HOST, LocalServer, require_binary
from chaos.worker.beanstalkd import tube_for


def answers(host: str, port: int) -> bool:
    """Whether a beanstalkd there answers `stats` (it serves clients once it has replayed its binlog)."""
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(b"stats\r\n")
            return sock.recv(16).startswith(b"OK ")
    except OSError:
        return False


class LocalBeanstalkd(LocalServer):
    kind: ClassVar[str] = "beanstalkd"
    name: ClassVar[str] = "beanstalkd"
    version_flag: ClassVar[str | None] = "-v"

    namespace_for = staticmethod(tube_for)

    @property
    def binlog(self) -> bool:
        return bool(self.option(BINLOG) == "on")

    def argv(self) -> list[str]:
        argv = [require_binary("beanstalkd", "beanstalkd", "beanstalkd"), "-l", HOST, "-p", str(self.port)]
        return argv + (["-b", str(self.data_dir)] if self.binlog else [])

    def ready(self) -> bool:
        return answers(HOST, self.port)

    def url_at(self, host: str, port: int) -> str:
        return f"beanstalk://{host}:{port}"

    def describe(self) -> dict[str, Any]:
        return {"binlog": self.binlog, "namespace": self.namespace}
