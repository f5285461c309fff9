"""Worker-side probe client: standard library only, so it imports inside any target's virtualenv.

Every probe carries the worker's own wall clock (`clock`), so a skewed clock shows in the ledger.
A worker calls these at the points of a job's life; each call blocks until the sink has committed the
probe to the ledger (and, when a gate holds it, until the controller releases it).
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.parse
from typing import Any

POINTS = ("claim", "effect", "heartbeat", "ack", "abandon")

_local = threading.local()


class ProbeError(RuntimeError):
    """The sink refused or could not be reached; a worker should treat this as fatal."""


def _connection() -> http.client.HTTPConnection:
    """This thread's keep-alive connection to the sink named in the environment."""
    url = os.environ["CHAOS_SINK_URL"]
    conn: http.client.HTTPConnection | None = getattr(_local, "conn", None)
    if conn is None or getattr(_local, "url", None) != url:
        if conn is not None:
            conn.close()
        parts = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=None)
        _local.conn, _local.url = conn, url
    return conn


def send(point: str, job: str, **fields: Any) -> dict[str, Any]:
    """POST one probe over this thread's keep-alive connection and return the sink's answer."""
    body = dict(fields, job=job, worker=os.environ.get("CHAOS_WORKER_ID", ""), pid=os.getpid(), clock=time.time())
    headers = {"Content-Type": "application/json", "X-Chaos-Token": os.environ.get("CHAOS_RUN_TOKEN", "")}
    conn = _connection()
    try:
        conn.request("POST", f"/probe/{point}", json.dumps(body), headers)
        response = conn.getresponse()
        answer: dict[str, Any] = json.loads(response.read() or b"{}")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        conn.close()
        _local.conn = None
        raise ProbeError(f"probe {point} for job {job} failed: {exc}") from exc
    if response.status != 200:
        raise ProbeError(f"sink refused probe {point}: {answer.get('error', response.status)}")
    return answer


def claim(job: str, token: str) -> dict[str, Any]:
    return send("claim", job, token=token)


def effect(job: str, token: str, key: str | None = None) -> dict[str, Any]:
    """Record the external side effect; `accepted` is false when a deduping or fencing sink refused it."""
    return send("effect", job, token=token, key=key or job)


def heartbeat(job: str, token: str, ok: bool) -> dict[str, Any]:
    return send("heartbeat", job, token=token, ok=ok)


def ack(job: str, token: str, ok: bool) -> dict[str, Any]:
    return send("ack", job, token=token, ok=ok)


def abandon(job: str, token: str) -> dict[str, Any]:
    return send("abandon", job, token=token)
