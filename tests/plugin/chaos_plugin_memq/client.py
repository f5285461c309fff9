"""The memq server's HTTP API, for the control and the workers alike (standard library only)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

TIMEOUT_S = 5.0


def call(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """POST `body` to `path` (GET without one); the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
        return json.loads(reply.read())
