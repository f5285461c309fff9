"""Worker-side beanstalkd plumbing shared by the beanstalkd reference target (and its control): the
run's tube, and a client whose socket times out instead of hanging when the network is cut. Python 3.8
syntax, like the rest of `chaos.worker`; needs the `greenstalk` package."""

from __future__ import annotations

import os
import re
import socket
import urllib.parse
from typing import Any

import greenstalk

from chaos import events

TRANSIENT = (OSError, greenstalk.UnknownResponseError)  # refused, reset, timed out (socket.timeout is an OSError)
RESERVE_S = 1  # how long a reserve waits for a job before the loop looks at its stop flag
SOCKET_TIMEOUT_S = 3.0  # longer than RESERVE_S


def tube_for(run_id: str) -> str:
    """The run's tube: a beanstalkd name (letters, digits, -+/;.$_()) of at most 200 bytes."""
    return ("chaos-" + re.sub(r"[^A-Za-z0-9+/;.$_()-]", "_", run_id))[:200]


def connect(url: str = "", tube: str = "") -> Any:
    """A client using and watching the run's tube; by default on this worker's own endpoint."""
    parts = urllib.parse.urlsplit(url or os.environ[events.ENV_BACKEND_URL])
    tube = tube or os.environ[events.ENV_NAMESPACE]
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 11300), timeout=SOCKET_TIMEOUT_S)
    try:
        return greenstalk.Client(sock, use=tube, watch=tube)
    except BaseException:
        sock.close()
        raise


__all__ = ["RESERVE_S", "TRANSIENT", "connect", "tube_for"]
