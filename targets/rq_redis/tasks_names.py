"""What the worker wrapper and the control share without importing RQ's job code: the queue's name and
each `monitoring` variant's `rq worker` flags (worker.py explains them)."""

from __future__ import annotations

FLAGS: dict[str, list[str]] = {
    "default": [],
    "interval1s_ttl16": ["--job-monitoring-interval", "1", "--maintenance-interval", "1", "--worker-ttl", "16"],
}


def queue_name(namespace: str) -> str:
    """The run's RQ queue: the run's namespace and `rq` (`rq` alone on the local server)."""
    return f"{namespace}rq"
