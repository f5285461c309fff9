"""Which Toxiproxy a run uses, in this order: TOXIPROXY_URL if set, else a `toxiproxy-server` binary on
PATH (started on a free port, stopped at the end, and killed by the kernel with a runner killed outright),
else the embedded server in the suite's process. The verdict records which one (`network`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from chaos import ports
from chaos.errors import HarnessError
from chaos.procs import die_with_parent
from chaos.toxiproxy.client import ToxiproxyControl
from chaos.toxiproxy.proxy import Journal
from chaos.toxiproxy.server import EmbeddedToxiproxy

ENV_URL = "TOXIPROXY_URL"
BINARY = "toxiproxy-server"
START_TIMEOUT_S = 10.0


@dataclass
class ToxiproxyServer:
    """A Toxiproxy the run controls: `kind` is external, binary or embedded; `close()` stops what the
    suite started (never an external server)."""

    kind: str
    control: ToxiproxyControl
    embedded: EmbeddedToxiproxy | None = None
    process: subprocess.Popen[bytes] | None = None
    port: int = 0  # the API port reserved for the binary

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        ports.release(self.port)


def start_toxiproxy(log_dir: Path, journal: Journal) -> ToxiproxyServer:
    url = os.environ.get(ENV_URL)
    if url:
        control = ToxiproxyControl(url)
        control.version()  # reachable, or a clear HarnessError now
        return ToxiproxyServer("external", control)
    binary = shutil.which(BINARY)
    if binary is not None:
        return _start_binary(binary, log_dir)
    embedded = EmbeddedToxiproxy(journal=journal).start()
    return ToxiproxyServer("embedded", ToxiproxyControl(embedded.url), embedded=embedded)


def _start_binary(binary: str, log_dir: Path) -> ToxiproxyServer:
    """Start it as a child that dies with us (its working directory the run's, so the leftovers check knows
    it), and poll its API until it answers: a server may take a while to listen."""
    port = ports.reserve()
    log = open(log_dir / "toxiproxy.log", "ab")  # noqa: SIM115 - the server writes to it until it stops
    process = subprocess.Popen([binary, "-host", ports.HOST, "-port", str(port)], stdout=log, stderr=log,
                               stdin=subprocess.DEVNULL, cwd=log_dir, start_new_session=True,
                               preexec_fn=die_with_parent(signal.SIGKILL))
    log.close()
    server = ToxiproxyServer("binary", ToxiproxyControl(f"http://{ports.HOST}:{port}"), process=process,
                             port=port)
    until = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < until and process.poll() is None:
        try:
            server.control.version()
            return server
        except HarnessError:
            time.sleep(0.05)
    why = (f"exited with status {process.returncode}" if process.poll() is not None
           else f"did not answer on port {port} within {START_TIMEOUT_S:.0f}s")
    server.close()
    raise HarnessError(f"{binary} {why}; see {log_dir / 'toxiproxy.log'}")
