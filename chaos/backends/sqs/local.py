"""The local SQS provider: moto's standalone server (`python -m moto.server`), an emulator of SQS, run by
the suite's own interpreter in the run dir. Its clients get fake credentials and a region through the URL,
never the user's real ones. Every backend.start it records names it as an emulator with its version, and
every verdict of a run on it says so: a finding on moto is a finding on moto."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import urllib.request
from typing import Any, ClassVar

from chaos.backends.local_server import HOST, LocalServer
from chaos.errors import ConfigError
from chaos.worker.sqs import DEFAULT_REGION, queue_for

FAKE_CREDENTIALS = "chaos:chaos"  # moto checks none; a client must still sign its requests with something
PROBE_TIMEOUT_S = 2.0  # one readiness request's


def moto_version() -> str:
    try:
        return importlib.metadata.version("moto")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


class LocalSqs(LocalServer):
    kind: ClassVar[str] = "sqs"
    name: ClassVar[str] = "SQS (moto)"
    capabilities: ClassVar[frozenset[str]] = frozenset()  # in memory only: a restart would wipe every queue
    version_flag: ClassVar[str | None] = None  # its binary is Python's; describe() names moto's version

    namespace_for = staticmethod(queue_for)

    def argv(self) -> list[str]:
        if importlib.util.find_spec("moto") is None or importlib.util.find_spec("moto.server") is None:
            raise ConfigError(f"The local SQS backend runs moto's server (`python -m moto.server`) with this "
                              f"interpreter ({sys.executable}), but moto's server is not installed for it. "
                              "Install it with `pip install 'moto[server]==5.2.6'` (or run ci/setup.sh), or "
                              "use --backend external with an SQS endpoint of yours.")
        return [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.port}/moto-api/", timeout=PROBE_TIMEOUT_S) as reply:
                return int(reply.status) == 200
        except OSError:  # refused while it starts (urllib's URLError is an OSError)
            return False

    def url_at(self, host: str, port: int) -> str:
        return f"http://{FAKE_CREDENTIALS}@{host}:{port}/?region={DEFAULT_REGION}"

    def describe(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "emulator": f"moto {moto_version()}"}
